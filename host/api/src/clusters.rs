//! A cluster's `status` (whether rsync reaches it, as its probe last saw
//! it, and, as EMCO's ncm answers, its network intents' status) and the
//! network intents' actions: `apply`, `terminate`, `stop`.

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use wasmco_orchestrator::NetworkSetRef;
use wasmco_store::appcontext::{DigState, Reachability};

use crate::deployments::{StatusQuery, status_body};
use crate::error::ApiError;
use crate::pki::ClusterPath;
use crate::state::AppState;

/// The route, relative to a cluster's item path.
pub const STATUS_ROUTE: &str = "status";

/// An action on a cluster's network intents, `POST …/clusters/{c}/{action}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkAction {
    /// Hand the networks to rsync (again, as they are now, once applied).
    Apply,
    /// Remove them from the cluster.
    Terminate,
    /// Stop rsync's work on them.
    Stop,
}

impl NetworkAction {
    /// Every action.
    pub const ALL: [NetworkAction; 3] = [
        NetworkAction::Apply,
        NetworkAction::Terminate,
        NetworkAction::Stop,
    ];

    /// Its route, relative to a cluster's item path.
    pub fn route(self) -> &'static str {
        match self {
            NetworkAction::Apply => "apply",
            NetworkAction::Terminate => "terminate",
            NetworkAction::Stop => "stop",
        }
    }
}

fn network_set(path: &ClusterPath) -> NetworkSetRef {
    let (provider, cluster) = path.names();
    NetworkSetRef {
        provider: provider.to_owned(),
        cluster: cluster.to_owned(),
    }
}

fn header_of(set: &NetworkSetRef, state: &DigState) -> serde_json::Value {
    json!({
        "name": format!("{}+{}", set.provider, set.cluster),
        "clusterProvider": set.provider,
        "cluster": set.cluster,
        "deployedStatus": state.state,
        "revision": state.revision,
        "states": {"actions": state.actions},
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
) -> Result<Response, ApiError> {
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
    let mut body = header_of(&set, &networks);
    match health {
        None => body["state"] = json!("Unknown"),
        Some(health) => {
            body["state"] = json!(match health.state {
                Reachability::Reachable => "Reachable",
                Reachability::Unreachable => "Unreachable",
            });
            body["since"] = json!(health.since);
            if let Some(error) = health.last_error {
                body["lastError"] = json!(error);
            }
            if let Some(version) = health.version {
                body["version"] = json!(version);
            }
        }
    }
    status_body(body, &networks, synced.as_ref(), &query)
}
