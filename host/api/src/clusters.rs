//! A cluster's `status` (whether rsync reaches it, as its probe last saw
//! it, and, as EMCO's ncm answers, its network intents' status) and the
//! network intents' actions: `apply`, `terminate`, `stop`.

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use wasmco_core::wire::{ClusterState, DeploymentState, DeploymentStatus, Subject};
use wasmco_orchestrator::NetworkSetRef;
use wasmco_store::appcontext::DigState;

pub use wasmco_core::wire::NetworkAction;

use crate::deployments::{StatusQuery, status_body};
use crate::error::ApiError;
use crate::pki::ClusterPath;
use crate::state::AppState;

/// The route, relative to a cluster's item path.
pub const STATUS_ROUTE: &str = "status";

fn network_set(path: &ClusterPath) -> NetworkSetRef {
    let (provider, cluster) = path.names();
    NetworkSetRef {
        provider: provider.to_owned(),
        cluster: cluster.to_owned(),
    }
}

fn header_of(set: &NetworkSetRef, state: &DigState) -> DeploymentState {
    state.answer(Subject {
        name: format!("{}+{}", set.provider, set.cluster),
        cluster_provider: Some(set.provider.clone()),
        cluster: Some(set.cluster.clone()),
        ..Subject::default()
    })
}

/// `POST …/clusters/{cluster}/{apply|terminate|stop}`.
pub async fn act(
    state: AppState,
    action: NetworkAction,
    Path(path): Path<ClusterPath>,
) -> Result<Response, ApiError> {
    let set = network_set(&path);
    let orchestrator = state.orchestrator.clone();
    let target = set.clone();
    let new_state = crate::work::off_the_workers(move || match action {
        NetworkAction::Apply => orchestrator.apply_networks(&target),
        NetworkAction::Terminate => orchestrator.terminate_networks(&target),
        NetworkAction::Stop => orchestrator.stop_networks(&target),
    })
    .await??;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(header_of(&set, &new_state)),
    )
        .into_response())
}

/// The cluster's health (`state`: `Reachable`, `Unreachable`, or
/// `Unknown` before its first probe; since when, the last error and the
/// server's version) and its network intents' status, as a DIG's (with the
/// same query).
pub async fn status(
    state: AppState,
    Path(path): Path<ClusterPath>,
    query: Query<StatusQuery>,
) -> Result<axum::Json<DeploymentStatus>, ApiError> {
    let query = query.0.checked()?;
    let orchestrator = state.orchestrator.clone();
    let set = network_set(&path);
    let (provider, cluster) = (set.provider.clone(), set.cluster.clone());
    let (health, (networks, synced)) = crate::work::off_the_workers({
        let set = set.clone();
        move || {
            let health = orchestrator.cluster_health(&provider, &cluster)?;
            Ok::<_, wasmco_orchestrator::OrchestratorError>((
                health,
                orchestrator.networks_status(&set)?,
            ))
        }
    })
    .await??;
    let mut body = status_body(header_of(&set, &networks), synced.as_ref(), &query);
    body.state = Some(ClusterState::from(health.as_ref().map(|h| h.state)));
    if let Some(health) = health {
        body.since = Some(health.since);
        body.last_error = health.last_error;
        body.version = health.version;
    }
    Ok(axum::Json(body))
}
