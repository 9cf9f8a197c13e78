//! What a virtual cluster does on its own, and the faults a test can make it
//! show: workloads become ready after a set delay; requests can fail with
//! 500 or 429, or be slowed down.

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
        "Job" => json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
        "Pod" => json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
        _ => return None,
    })
}
