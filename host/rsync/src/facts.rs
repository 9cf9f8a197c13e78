//! What placement controllers may ask of a cluster: its nodes, with what
//! each still has free, read through the cluster's own kubeconfig.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use wasmco_core::ClusterRef;
use wasmco_core::quantity;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::ClusterFacts;

use crate::engine::Rsync;
use crate::target::{Labels, SyncTarget};

/// How long a placement waits for a cluster's nodes before deciding
/// without them.
const NODES_TIMEOUT: Duration = Duration::from_secs(10);

impl ClusterFacts for Rsync {
    fn object(&self, cluster: &ClusterRef, manifest: &Value) -> Result<Option<Value>, String> {
        let resource = Resource::from_manifest(manifest.clone()).map_err(|e| e.to_string())?;
        self.read_from(cluster, async move |target: Arc<dyn SyncTarget>| {
            target.get(&resource).await.map_err(|e| e.to_string())
        })
    }

    fn node_addresses(&self, cluster: &ClusterRef) -> Result<Vec<String>, String> {
        self.read_from(cluster, async move |target: Arc<dyn SyncTarget>| {
            let nodes = target
                .list_labelled("v1", "Node", &Labels::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(nodes
                .iter()
                .flat_map(|node| node["status"]["addresses"].as_array().cloned())
                .flatten()
                .filter_map(|address| address["address"].as_str().map(str::to_owned))
                .filter(|address| address.parse::<std::net::IpAddr>().is_ok())
                .collect())
        })
    }

    fn nodes(&self, cluster: &ClusterRef) -> Result<Value, String> {
        self.nodes_of(std::slice::from_ref(cluster))
            .pop()
            .unwrap_or_else(|| Err("no answer".to_owned()))
    }

    /// Asks up to `parallel_clusters` clusters at once, each within
    /// [`NODES_TIMEOUT`].
    fn nodes_of(&self, clusters: &[ClusterRef]) -> Vec<Result<Value, String>> {
        let inner = self.inner.clone();
        let count = clusters.len();
        let clusters = clusters.to_vec();
        let at_once = self.inner.config.parallel_clusters.max(1);
        let (sender, answer) = std::sync::mpsc::channel();
        // The orchestrator asks from its own (blocking) threads; the
        // clients live on rsync's runtime.
        self.inner.runtime.spawn(async move {
            let asked = clusters.into_iter().map(|cluster| {
                let inner = inner.clone();
                async move {
                    let read = async {
                        let target = inner
                            .clients
                            .target(&cluster)
                            .await
                            .map_err(|e| e.to_string())?;
                        read_nodes(target.as_ref()).await
                    };
                    tokio::time::timeout(NODES_TIMEOUT, read)
                        .await
                        .unwrap_or_else(|_| Err(format!("no answer in {NODES_TIMEOUT:?}")))
                }
            });
            let answers: Vec<_> = futures_util::stream::iter(asked)
                .buffered(at_once)
                .collect()
                .await;
            let _ = sender.send(answers);
        });
        answer.recv().unwrap_or_else(|_| {
            (0..count)
                .map(|_| Err("rsync stopped before answering".to_owned()))
                .collect()
        })
    }
}

impl Rsync {
    /// Runs `read` against `cluster`'s client on rsync's runtime, for a
    /// caller on a blocking thread, within [`NODES_TIMEOUT`].
    fn read_from<T, F, Answer>(&self, cluster: &ClusterRef, read: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(Arc<dyn SyncTarget>) -> Answer + Send + 'static,
        Answer: Future<Output = Result<T, String>> + Send,
    {
        let inner = self.inner.clone();
        let cluster = cluster.clone();
        let (sender, answer) = std::sync::mpsc::channel();
        self.inner.runtime.spawn(async move {
            let asked = async {
                let target = inner
                    .clients
                    .target(&cluster)
                    .await
                    .map_err(|e| e.to_string())?;
                read(target).await
            };
            let answer = tokio::time::timeout(NODES_TIMEOUT, asked)
                .await
                .unwrap_or_else(|_| Err(format!("no answer in {NODES_TIMEOUT:?}")));
            let _ = sender.send(answer);
        });
        answer
            .recv()
            .unwrap_or_else(|_| Err("rsync stopped before answering".to_owned()))
    }
}

/// Each node's name, labels and `available`: its allocatable amounts less
/// what the pods bound to it (and not finished) request, in whole units
/// (cores, bytes, devices).
async fn read_nodes(target: &dyn SyncTarget) -> Result<Value, String> {
    let everything = Labels::default();
    let nodes = target
        .list_labelled("v1", "Node", &everything)
        .await
        .map_err(|e| e.to_string())?;
    let pods = target
        .list_labelled("v1", "Pod", &everything)
        .await
        .map_err(|e| e.to_string())?;
    let mut requested: BTreeMap<&str, BTreeMap<String, u128>> = BTreeMap::new();
    for pod in &pods {
        let finished = matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
        let Some(node) = pod["spec"]["nodeName"].as_str().filter(|_| !finished) else {
            continue;
        };
        let on_node = requested.entry(node).or_default();
        for (resource, millis) in pod_requests(pod) {
            *on_node.entry(resource).or_default() += millis;
        }
    }
    let described: Vec<Value> = nodes
        .iter()
        .map(|node| describe_node(node, &requested))
        .collect();
    Ok(Value::Array(described))
}

/// A node's name, labels and what it has free, given what the pods on
/// each node request (in thousandths).
fn describe_node(node: &Value, requested: &BTreeMap<&str, BTreeMap<String, u128>>) -> Value {
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    let taken = requested.get(name);
    // JSON numbers stop at u64 (`json!` panics past it): a node reporting
    // more (`20E` of something) counts as having u64::MAX.
    let available: BTreeMap<&str, u64> = node["status"]["allocatable"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(resource, amount)| {
            let allocatable = quantity::millis(amount.as_str()?)?;
            let used = taken
                .and_then(|t| t.get(resource.as_str()))
                .copied()
                .unwrap_or_default();
            let whole = allocatable.saturating_sub(used) / 1000;
            Some((resource.as_str(), u64::try_from(whole).unwrap_or(u64::MAX)))
        })
        .collect();
    json!({
        "name": name,
        "labels": node["metadata"]["labels"].clone(),
        "available": available,
    })
}

/// What a pod takes from its node, per resource, in thousandths: the sum
/// of its containers' requests, or the largest init container's when that
/// is more (the scheduler's rule).
fn pod_requests(pod: &Value) -> BTreeMap<String, u128> {
    let requests = |container: &Value| -> BTreeMap<String, u128> {
        container["resources"]["requests"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(resource, amount)| {
                let millis = quantity::millis(amount.as_str()?)?;
                Some((resource.clone(), millis))
            })
            .collect()
    };
    let containers =
        |field: &str| -> Vec<Value> { pod["spec"][field].as_array().cloned().unwrap_or_default() };
    let mut total: BTreeMap<String, u128> = BTreeMap::new();
    for container in containers("containers") {
        for (resource, millis) in requests(&container) {
            *total.entry(resource).or_default() += millis;
        }
    }
    for init in containers("initContainers") {
        for (resource, millis) in requests(&init) {
            let entry = total.entry(resource).or_default();
            *entry = (*entry).max(millis);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_takes_its_containers_requests_or_its_largest_init_container() {
        let pod = json!({"spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"resources": {"requests": {"cpu": "250m"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}],
        }});
        let taken = pod_requests(&pod);
        assert_eq!(taken["cpu"], 2000);
        assert_eq!(taken["memory"], 1024 * 1024 * 1024 * 1000);
    }

    #[test]
    fn a_node_reporting_more_than_json_holds_counts_as_the_most_it_can() {
        let node = json!({"metadata": {"name": "n", "labels": {"a": "b"}},
            "status": {"allocatable": {"cpu": "4", "example.com/huge": "100E"}}});
        let taken = BTreeMap::from([("n", BTreeMap::from([("cpu".to_owned(), 1500)]))]);
        let described = describe_node(&node, &taken);
        assert_eq!(described["available"]["cpu"], 2);
        assert_eq!(described["available"]["example.com/huge"], u64::MAX);
        assert_eq!(described["labels"]["a"], "b");
    }
}
