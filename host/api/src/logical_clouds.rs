//! A logical cloud's actions (`instantiate`, `update`, `stop`, `terminate`),
//! its `status`,
//! and each referenced cluster's user kubeconfig.

use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use wasmco_core::Kind;
use wasmco_core::cloud::KUBECONFIG_SECRET;
use wasmco_core::wire::{DeploymentState, DeploymentStatus, Subject};
use wasmco_orchestrator::LogicalCloudRef;
use wasmco_store::appcontext::DigState;

pub use wasmco_core::wire::CloudAction;
use wasmco_store::db::ResourceId;

use super::deployments::{StatusQuery, status_body};
use super::error::ApiError;
use super::state::AppState;

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

fn header_of(lc: &LogicalCloudRef, state: &DigState) -> DeploymentState {
    state.answer(Subject {
        project: Some(lc.project.clone()),
        name: lc.name.clone(),
        ..Subject::default()
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
) -> Result<axum::Json<DeploymentStatus>, ApiError> {
    let query = query.0.checked()?;
    let lc: LogicalCloudRef = path.into();
    let orchestrator = state.orchestrator.clone();
    let target = lc.clone();
    let (lc_state, synced) =
        crate::work::off_the_workers(move || orchestrator.logical_cloud_status(&target)).await??;
    Ok(axum::Json(status_body(
        header_of(&lc, &lc_state),
        synced.as_ref(),
        &query,
    )))
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
