//! What a virtual cluster does on its own, and the faults a test can make it
//! show: workloads become ready after a set delay (Pods that do not restart,
//! and Jobs, complete); it has Nodes with a set capacity; requests can fail
//! with 500 or 429, or be slowed down.

use std::time::Duration;

use serde_json::{Value, json};

/// Settings of a virtual cluster's behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Behaviour {
    /// How long a workload (Deployment, StatefulSet, DaemonSet, Job, Pod)
    /// takes to become ready after it is created or changed.
    pub ready_after: Duration,
    /// Answer every request with this status (500 or 429), if set.
    pub fail_with: Option<u16>,
    /// Delay every request by this much.
    pub latency: Duration,
    /// The Nodes the cluster starts with. Read once, at start:
    /// [`crate::VirtualCluster::set_behaviour`] does not add or remove Nodes.
    pub nodes: Nodes,
}

/// The Nodes of a virtual cluster, all alike, so controllers that place
/// work by capacity (EMCO's HPA placement) have something to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    /// How many; the first is the control plane, the others workers.
    pub count: u32,
    /// CPU each has (and can allocate), as a quantity, e.g. `8` or `7500m`.
    pub cpu: String,
    /// Memory each has (and can allocate), as a quantity, e.g. `32Gi`.
    pub memory: String,
    /// How many Pods each takes.
    pub pods: u32,
}

impl Default for Nodes {
    /// One node the size of a typical small worker, with the kubelet's
    /// default Pod limit.
    fn default() -> Self {
        Nodes {
            count: 1,
            cpu: "8".into(),
            memory: "32Gi".into(),
            pods: 110,
        }
    }
}

impl Nodes {
    /// The Node objects, named after the cluster `cluster`.
    pub fn objects(&self, cluster: &str) -> Vec<Value> {
        let prefix = node_name_prefix(cluster);
        (0..self.count)
            .map(|i| {
                let (name, role) = if i == 0 {
                    (format!("{prefix}-control-plane"), "control-plane")
                } else {
                    (format!("{prefix}-worker-{i}"), "worker")
                };
                let resources = json!({
                    "cpu": self.cpu, "memory": self.memory, "pods": self.pods.to_string(),
                    "ephemeral-storage": "100Gi",
                });
                json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "beta.kubernetes.io/os": "linux",
                        "beta.kubernetes.io/arch": "amd64",
                        format!("node-role.kubernetes.io/{role}"): "",
                    }},
                    "spec": {"podCIDR": format!("10.244.{i}.0/24")},
                    "status": {
                        "capacity": resources, "allocatable": resources,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                        "message": "kubelet is posting ready status"}],
                        "addresses": [{"type": "InternalIP", "address": format!("10.0.0.{}", i + 2)},
                                      {"type": "Hostname", "address": name}],
                        "nodeInfo": {"kubeletVersion": "v1.31.0-wasmco", "operatingSystem": "linux",
                                     "architecture": "amd64", "containerRuntimeVersion": "wasmco://virtual"},
                    },
                })
            })
            .collect()
    }
}

/// A cluster name made into the start of a valid Node name: lowercase
/// letters, digits and `-`, as cluster names need not be.
fn node_name_prefix(cluster: &str) -> String {
    let name: String = cluster
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = name.trim_matches('-');
    let name = &name[..name.len().min(200)];
    if name.is_empty() {
        "virtual".to_owned()
    } else {
        name.trim_end_matches('-').to_owned()
    }
}

/// The status a ready workload reports, or `None` for kinds that are ready
/// once they exist.
pub fn ready_status(object: &Value) -> Option<Value> {
    let generation = object["metadata"]["generation"].clone();
    let replicas = object["spec"]["replicas"].as_u64().unwrap_or(1);
    Some(match object["kind"].as_str()? {
        "Deployment" => json!({
            "observedGeneration": generation, "replicas": replicas, "updatedReplicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}),
        "StatefulSet" => json!({
            "observedGeneration": generation, "replicas": replicas, "readyReplicas": replicas,
            "currentReplicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas}),
        "DaemonSet" => json!({
            "observedGeneration": generation, "desiredNumberScheduled": 1, "currentNumberScheduled": 1,
            "numberReady": 1, "updatedNumberScheduled": 1, "numberAvailable": 1}),
        "Job" => {
            let now = now();
            let completions = object["spec"]["completions"].as_u64().unwrap_or(1);
            json!({"startTime": now, "completionTime": now, "active": 0, "ready": 0,
                "succeeded": completions,
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                     "lastTransitionTime": now},
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                     "lastTransitionTime": now}]})
        }
        "Pod" => pod_status(object),
        _ => return None,
    })
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// A Pod runs for ever unless its containers are not restarted (Helm hooks,
/// Jobs' Pods): then they exit 0 and it has Succeeded, which is what Helm
/// and Job controllers wait for.
fn pod_status(pod: &Value) -> Value {
    let now = now();
    let completes = matches!(
        pod["spec"]["restartPolicy"].as_str(),
        Some("Never" | "OnFailure")
    );
    let statuses: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|container| {
            let state = if completes {
                json!({"terminated": {"exitCode": 0, "reason": "Completed",
                                      "startedAt": now, "finishedAt": now}})
            } else {
                json!({"running": {"startedAt": now}})
            };
            json!({"name": container["name"], "image": container["image"],
                   "ready": !completes, "started": !completes, "restartCount": 0, "state": state})
        })
        .collect();
    let ready = if completes { "False" } else { "True" };
    let mut conditions = vec![
        json!({"type": "PodScheduled", "status": "True"}),
        json!({"type": "Initialized", "status": "True"}),
        json!({"type": "ContainersReady", "status": ready}),
        json!({"type": "Ready", "status": ready}),
    ];
    if completes {
        // The API server says why a finished Pod is not ready.
        for condition in &mut conditions[2..] {
            condition["reason"] = json!("PodCompleted");
        }
    }
    json!({
        "phase": if completes { "Succeeded" } else { "Running" },
        "conditions": conditions,
        "containerStatuses": statuses,
        "startTime": now,
        "podIP": "10.244.0.10",
        "hostIP": "10.0.0.2",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_without_restarts_succeeds_and_others_run() {
        let pod = |policy: Option<&str>| {
            let mut pod = json!({"kind": "Pod", "metadata": {"generation": 1},
                "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
            if let Some(policy) = policy {
                pod["spec"]["restartPolicy"] = json!(policy);
            }
            ready_status(&pod).unwrap_or_default()
        };
        for policy in ["Never", "OnFailure"] {
            let status = pod(Some(policy));
            assert_eq!(status["phase"], "Succeeded");
            let containers = status["containerStatuses"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(containers.len(), 2);
            for container in containers {
                assert_eq!(container["state"]["terminated"]["exitCode"], 0);
                assert_eq!(container["state"]["terminated"]["reason"], "Completed");
                assert_eq!(container["ready"], false);
            }
        }
        for policy in [None, Some("Always")] {
            let status = pod(policy);
            assert_eq!(status["phase"], "Running");
            assert_eq!(status["containerStatuses"][1]["ready"], true);
            assert!(status["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            }));
        }
    }

    #[test]
    fn a_job_completes_as_many_times_as_asked() {
        let job = json!({"kind": "Job", "spec": {"completions": 3}});
        let status = ready_status(&job).unwrap_or_default();
        assert_eq!(status["succeeded"], 3);
        assert_eq!(status["conditions"][1]["type"], "Complete");
        assert_eq!(status["conditions"][1]["status"], "True");
    }

    #[test]
    fn nodes_are_named_after_the_cluster_and_carry_their_capacity() {
        let nodes = Nodes {
            count: 2,
            ..Default::default()
        }
        .objects("Edge_01.");
        let names: Vec<&str> = nodes
            .iter()
            .filter_map(|n| n["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["edge-01-control-plane", "edge-01-worker-1"]);
        assert_eq!(nodes[1]["status"]["capacity"]["pods"], "110");
        assert_eq!(
            nodes[1]["metadata"]["labels"]["kubernetes.io/hostname"],
            "edge-01-worker-1"
        );
        assert_eq!(Nodes::default().objects("").len(), 1);
        assert_eq!(
            Nodes::default().objects("--")[0]["metadata"]["name"],
            "virtual-control-plane"
        );
        assert!(
            Nodes {
                count: 0,
                ..Default::default()
            }
            .objects("c")
            .is_empty()
        );
    }
}
