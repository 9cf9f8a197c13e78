//! When an object a cluster holds is ready.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::wait::{Condition, conditions};
use serde_json::Value;

/// Whether objects of `kind` are ready as soon as they exist (no status to wait for).
pub fn ready_once_applied(kind: &str) -> bool {
    !matches!(
        kind,
        "Deployment"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "Pod"
            | "CustomResourceDefinition"
            | "CertificateSigningRequest"
    )
}

/// Readiness as the cluster reports it: workloads rolled out, Jobs complete,
/// Pods ready, CRDs established, certificates issued; anything else once
/// it exists.
///
/// Jobs and CRDs use kube-runtime's own conditions. Its workload
/// conditions do not fit: `is_deployment_completed` reads the Progressing
/// condition's reason, which says a rollout finished, not that the wanted
/// replicas are available, and `is_pod_running` is the phase, not Ready.
pub fn is_ready(kind: &str, object: &Value) -> bool {
    /// The typed object, for kube-runtime's conditions.
    fn typed<K: serde::de::DeserializeOwned>(object: &Value) -> Option<K> {
        serde_json::from_value(object.clone()).ok()
    }
    let status = &object["status"];
    let condition = |name: &str| {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == name && c["status"] == "True")
    };
    let generation_seen =
        || status["observedGeneration"].as_i64() >= object["metadata"]["generation"].as_i64();
    let wanted = object["spec"]["replicas"].as_i64().unwrap_or(1);
    match kind {
        "Deployment" => {
            generation_seen() && status["availableReplicas"].as_i64().unwrap_or(0) >= wanted
        }
        "StatefulSet" => {
            generation_seen() && status["readyReplicas"].as_i64().unwrap_or(0) >= wanted
        }
        "DaemonSet" => {
            generation_seen()
                && status["numberReady"].as_i64().unwrap_or(-1)
                    >= status["desiredNumberScheduled"].as_i64().unwrap_or(0)
        }
        "Job" => conditions::is_job_completed().matches_object(typed::<Job>(object).as_ref()),
        "Pod" => condition("Ready"),
        "CustomResourceDefinition" => conditions::is_crd_established()
            .matches_object(typed::<CustomResourceDefinition>(object).as_ref()),
        // Issued: the signer put the certificate in.
        "CertificateSigningRequest" => status["certificate"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jobs_and_crds_are_ready_by_kube_runtimes_conditions() {
        let crd = |established: &str| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "gadgets.example.com"},
                   "spec": {"group": "example.com", "scope": "Namespaced",
                            "names": {"plural": "gadgets", "kind": "Gadget"}, "versions": []},
                   "status": {"conditions": [{"type": "Established", "status": established}]}})
        };
        assert!(is_ready("CustomResourceDefinition", &crd("True")));
        assert!(!is_ready("CustomResourceDefinition", &crd("False")));
        let job = |conditions: Value| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                   "status": {"conditions": conditions}})
        };
        assert!(is_ready(
            "Job",
            &job(json!([{"type": "Complete", "status": "True"}]))
        ));
        assert!(!is_ready(
            "Job",
            &job(json!([{"type": "Failed", "status": "True"}]))
        ));
        assert!(!is_ready(
            "Job",
            &json!({"kind": "Job", "metadata": {"name": "j"}})
        ));
        assert!(is_ready("ConfigMap", &json!({})));
    }
}
