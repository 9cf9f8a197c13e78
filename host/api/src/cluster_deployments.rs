//! A cluster deployment's `deploy` action and its `status`: where each of
//! its machines is in Eggo's phases.

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use wasmco_core::eggo::JoinFile;
use wasmco_core::wire::{
    CleanupRequest, ClusterDeploymentAction, ClusterDeploymentStatus, NodeRemoval,
};
use wasmco_orchestrator::ClusterDeploymentRef;

use crate::error::ApiError;
use crate::state::AppState;

/// The route of its status, relative to the deployment's item path.
pub const STATUS_ROUTE: &str = "status";

/// A cluster deployment's path.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentPath {
    cluster_provider: String,
    cluster_deployment: String,
}

impl From<DeploymentPath> for ClusterDeploymentRef {
    fn from(path: DeploymentPath) -> Self {
        ClusterDeploymentRef {
            provider: path.cluster_provider,
            name: path.cluster_deployment,
        }
    }
}

/// `POST …/cluster-deployments/{clusterDeployment}/deploy`, `…/cleanup`,
/// `…/join`, `…/delete` or `…/upgrade`: the run starts and the answer comes at once
/// (202), with the status as it starts.
pub async fn act(
    state: AppState,
    action: ClusterDeploymentAction,
    target: ClusterDeploymentRef,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request = Request::read(action, &body)?;
    let orchestrator = state.orchestrator.clone();
    let deployments = orchestrator.cluster_deployments();
    let status = crate::work::off_the_workers(move || match request {
        Request::Deploy => deployments.deploy(&target),
        Request::Cleanup(cleanup) => {
            orchestrator.cleanup_cluster_deployment(&target, cleanup.force)
        }
        Request::Join(join) => deployments.join(&target, &join),
        Request::Delete(removal) => deployments.delete_nodes(&target, &removal.nodes),
        Request::Upgrade => deployments.upgrade(&target),
    })
    .await??;
    Ok((StatusCode::ACCEPTED, axum::Json(status)).into_response())
}

/// An action with its body read.
enum Request {
    Deploy,
    Cleanup(CleanupRequest),
    Join(JoinFile),
    Delete(NodeRemoval),
    Upgrade,
}

impl Request {
    /// `action` with its JSON body; no body (or `null`) is an empty object,
    /// which only the actions whose every field is optional take.
    fn read(action: ClusterDeploymentAction, body: &[u8]) -> Result<Request, ApiError> {
        let bad = |reason: String| ApiError::field(StatusCode::BAD_REQUEST, "body", reason);
        let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(body).map_err(|e| bad(format!("is not JSON: {e}")))?
        };
        let value = match value {
            Value::Null => Value::Object(Default::default()),
            value => value,
        };
        Ok(match action {
            ClusterDeploymentAction::Deploy => Request::Deploy,
            ClusterDeploymentAction::Cleanup => Request::Cleanup(wasmco_core::read_body(&value)?),
            ClusterDeploymentAction::Join => Request::Join(wasmco_core::read_body(&value)?),
            ClusterDeploymentAction::Delete => Request::Delete(wasmco_core::read_body(&value)?),
            ClusterDeploymentAction::Upgrade => Request::Upgrade,
        })
    }
}

/// `GET …/cluster-deployments/{clusterDeployment}/status`.
pub async fn status(
    state: AppState,
    target: ClusterDeploymentRef,
) -> Result<axum::Json<ClusterDeploymentStatus>, ApiError> {
    let deployments = state.orchestrator.cluster_deployments();
    let status = crate::work::off_the_workers(move || deployments.status(&target)).await??;
    Ok(axum::Json(status))
}
