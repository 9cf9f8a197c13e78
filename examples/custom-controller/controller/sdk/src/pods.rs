//! Where a workload keeps the metadata its pods get, for action
//! controllers that label or annotate an app's pods.

use serde_json::{Value, json};

/// A JSON merge patch giving the pods of a workload of `kind` (a built-in
/// kind: Pod, Deployment, DaemonSet, StatefulSet, ReplicaSet, Job, CronJob,
/// ReplicationController) the pod `metadata` given (`{"labels": {…}}`);
/// `None` for a kind without pods.
pub fn metadata_patch(kind: &str, metadata: Value) -> Option<Value> {
    let metadata = json!({ "metadata": metadata });
    Some(match kind {
        "Pod" => metadata,
        "Deployment"
        | "DaemonSet"
        | "StatefulSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => json!({ "spec": { "template": metadata } }),
        "CronJob" => json!({ "spec": { "jobTemplate": { "spec": { "template": metadata } } } }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_patches_its_pods_and_a_podless_kind_none() {
        let labels = json!({"labels": {"app": "slb"}});
        assert_eq!(
            metadata_patch("Deployment", labels.clone()),
            Some(json!({"spec": {"template": {"metadata": {"labels": {"app": "slb"}}}}}))
        );
        assert_eq!(
            metadata_patch("Pod", labels.clone()),
            Some(json!({"metadata": {"labels": {"app": "slb"}}}))
        );
        assert!(
            metadata_patch("CronJob", labels.clone()).unwrap()["spec"]["jobTemplate"].is_object()
        );
        assert_eq!(metadata_patch("Service", labels), None);
    }
}
