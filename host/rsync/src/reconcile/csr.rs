//! CertificateSigningRequests rsync applies: approved by rsync, as EMCO's
//! rsync approves its own, and, for a logical cloud's user, the issued
//! certificate kept as that user's kubeconfig on the cluster.

use base64::Engine;
use serde_json::Value;

use wasmco_core::cloud::CSR_KIND;
use wasmco_core::resource::Resource;

use super::cluster::ClusterWork;
use crate::target::SyncError;

/// Whether the request carries condition `kind` as true.
fn has_condition(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// Whether `resource` is a certificate request rsync approves, as
/// EMCO's does for a logical cloud's user: Kubernetes' own kind, in a
/// context the admin's rights built (a project's could ask for any
/// identity).
pub(super) fn approves(work: &ClusterWork, resource: &Resource) -> bool {
    resource.key.kind == CSR_KIND
        && resource.api_version == "certificates.k8s.io/v1"
        && work.unconfined()
}

/// Approves the request unless the cluster decided on it already; why
/// not, when it was denied or could not be signed.
pub(super) async fn approve(work: &ClusterWork, resource: &Resource) -> Result<(), String> {
    let object = work
        .with_retries(|target| async move { target.get(resource).await })
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    for refusal in ["Denied", "Failed"] {
        if has_condition(&object, refusal) {
            let message = object["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == refusal)
                .and_then(|c| c["message"].as_str())
                .unwrap_or_default();
            return Err(format!("the cluster's signer: {refusal}: {message}"));
        }
    }
    if has_condition(&object, "Approved") {
        return Ok(());
    }
    work.with_retries(|target| async move { target.approve(resource).await })
        .await
        .map_err(|e| format!("approving the request: {e}"))
}

/// Keeps the certificate the cluster issued for the request (see
/// `Clients::keep_user_certificate`).
pub(super) async fn keep_certificate(
    work: &ClusterWork,
    resource: &Resource,
) -> Result<(), SyncError> {
    let object = work
        .with_retries(|target| async move { target.get(resource).await })
        .await?
        .unwrap_or_default();
    let issued = object["status"]["certificate"].as_str().unwrap_or_default();
    let certificate = base64::engine::general_purpose::STANDARD
        .decode(issued)
        .ok()
        .and_then(|pem| String::from_utf8(pem).ok())
        .filter(|pem| pem.contains("-----BEGIN CERTIFICATE-----"))
        .ok_or_else(|| {
            SyncError::Config(format!(
                "{} {}: status.certificate is not a base64 PEM certificate",
                resource.key.kind, resource.key.name
            ))
        })?;
    work.reconciler
        .clients
        .keep_user_certificate(&work.context.meta, &work.cluster, &certificate)
}
