//! A logical cloud's actions (`instantiate`, `update`, `stop`, `terminate`),
//! its `status`,
//! and each referenced cluster's user kubeconfig.

use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use wasmco_core::Kind;
use wasmco_core::cloud::KUBECONFIG_SECRET;
use wasmco_orchestrator::LogicalCloudRef;
use wasmco_store::appcontext::DigState;
use wasmco_store::db::ResourceId;

use super::deployments::{StatusQuery, status_body};
use super::error::ApiError;
use super::state::AppState;

/// An action on a logical cloud, `POST …/{lc}/{action}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloudAction {
    /// Issue the user's certificates and create what the cloud needs.
    Instantiate,
    /// Remove what instantiate created.
    Terminate,
    /// Make the cloud what its references, permissions and quotas are now.
    Update,
    /// Stop rsync's work on it.
    Stop,
}

impl CloudAction {
    /// Every action.
    pub const ALL: [CloudAction; 4] = [
        CloudAction::Instantiate,
        CloudAction::Terminate,
        CloudAction::Update,
        CloudAction::Stop,
    ];

    /// Its route, relative to a logical cloud's item path.
    pub fn route(self) -> &'static str {
        match self {
            CloudAction::Instantiate => "instantiate",
            CloudAction::Terminate => "terminate",
            CloudAction::Update => "update",
            CloudAction::Stop => "stop",
        }
    }
}

/// The path of a logical cloud.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalCloudPath {
    project: String,
    logical_cloud: String,
}

impl From<LogicalCloudPath> for LogicalCloudRef {
    fn from(path: LogicalCloudPath) -> Self {
        LogicalCloudRef {
            project: path.project,
            name: path.logical_cloud,
        }
    }
}

/// The path of a logical cloud's cluster reference.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferencePath {
    project: String,
    logical_cloud: String,
    cluster_reference: String,
}

fn header_of(lc: &LogicalCloudRef, state: &DigState) -> serde_json::Value {
    json!({
        "project": lc.project,
        "name": lc.name,
        "deployedStatus": state.state,
        "revision": state.revision,
        "states": {"actions": state.actions},
    })
}

/// `POST …/logical-clouds/{lc}/{action}`.
pub async fn act(
    state: AppState,
    action: CloudAction,
    Path(path): Path<LogicalCloudPath>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let lc: LogicalCloudRef = path.into();
    let actor = crate::auth::actor(&request);
    let orchestrator = state.orchestrator.clone();
    let target = lc.clone();
    let new_state = crate::work::off_the_workers(move || match action {
        CloudAction::Instantiate => orchestrator.instantiate_logical_cloud(&target, actor),
        CloudAction::Terminate => orchestrator.terminate_logical_cloud(&target),
        CloudAction::Update => orchestrator.update_logical_cloud(&target, actor),
        CloudAction::Stop => orchestrator.stop_logical_cloud(&target),
    })
    .await??;
    Ok((StatusCode::ACCEPTED, axum::Json(header_of(&lc, &new_state))).into_response())
}

/// `GET …/logical-clouds/{lc}/status`: as a DIG's.
pub async fn status(
    state: AppState,
    Path(path): Path<LogicalCloudPath>,
    query: Query<StatusQuery>,
) -> Result<Response, ApiError> {
    let query = query.0.checked()?;
    let lc: LogicalCloudRef = path.into();
    let orchestrator = state.orchestrator.clone();
    let target = lc.clone();
    let (lc_state, synced) =
        crate::work::off_the_workers(move || orchestrator.logical_cloud_status(&target)).await??;
    status_body(
        header_of(&lc, &lc_state),
        &lc_state,
        synced.as_ref(),
        &query,
    )
}

/// `GET …/cluster-references/{ref}/kubeconfig`: the user's kubeconfig for
/// that cluster, made at instantiate (from a stored CA) or once the
/// cluster has issued the user's certificate.
pub async fn kubeconfig(
    state: AppState,
    Path(path): Path<ReferencePath>,
) -> Result<Response, ApiError> {
    let id = ResourceId::new(
        Kind::LogicalCloudClusterReference,
        vec![path.project, path.logical_cloud, path.cluster_reference],
    );
    state.db.get_raw(&id)?;
    let kubeconfig = state.db.secret(&id, KUBECONFIG_SECRET)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{} has no kubeconfig yet: the logical cloud is not instantiated, or the \
                 cluster has not issued its user's certificate (see the cloud's status)",
                id.describe()
            ),
        )
    })?;
    Ok(([(header::CONTENT_TYPE, "application/yaml")], kubeconfig).into_response())
}
