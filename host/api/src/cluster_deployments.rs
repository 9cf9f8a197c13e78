//! A cluster deployment's `deploy` action and its `status`: where each of
//! its machines is in Eggo's phases.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use wasmco_core::wire::{ClusterDeploymentAction, ClusterDeploymentStatus};
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

/// `POST …/cluster-deployments/{clusterDeployment}/deploy` or `…/cleanup`:
/// the run starts and the answer comes at once (202), with the status as
/// it starts.
pub async fn act(
    state: AppState,
    action: ClusterDeploymentAction,
    target: ClusterDeploymentRef,
) -> Result<Response, ApiError> {
    let deployments = state.orchestrator.cluster_deployments();
    let status = crate::work::off_the_workers(move || match action {
        ClusterDeploymentAction::Deploy => deployments.deploy(&target),
        ClusterDeploymentAction::Cleanup => deployments.cleanup(&target),
    })
    .await??;
    Ok((StatusCode::ACCEPTED, axum::Json(status)).into_response())
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
