//! `GET /v2/overview`: what the status page shows, in one answer: every
//! DIG with its state, history and a grid of apps × clusters; every cluster
//! with its labels, health and the DIGs placed on it; every controller with
//! its registration and its recent calls; every cluster deployment with
//! each machine's phase, step and last error.

use std::collections::{BTreeMap, BTreeSet};

use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

use wasmco_core::{ClusterRef, Kind};
use wasmco_orchestrator::{ClusterDeploymentRef, DigRef, OrchestratorError, TalliedContext};
use wasmco_store::appcontext::{
    ClusterHealth, Connectivity, DeployState, Deployed, DigState, Reachability, Readiness,
    StateAction, StoredApp,
};
use wasmco_store::db::DbError;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /v2/overview`.
pub async fn overview(state: AppState) -> Result<Response, ApiError> {
    crate::work::off_the_workers(move || gather(&state)).await?
}

/// The whole answer, serialised at once: at a thousand clusters its DIGs
/// hold tens of thousands of cells, too many to build as JSON values first.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Overview<'a> {
    digs: Vec<DigEntry<'a>>,
    clusters: Vec<Value>,
    controllers: Vec<Value>,
    cluster_deployments: Vec<Value>,
}

fn gather(state: &AppState) -> Result<Response, ApiError> {
    let healths: BTreeMap<ClusterRef, ClusterHealth> =
        state.orchestrator.cluster_healths()?.into_iter().collect();
    let unreachable: BTreeSet<ClusterRef> = healths
        .iter()
        .filter(|(_, health)| health.state == Reachability::Unreachable)
        .map(|(cluster, _)| cluster.clone())
        .collect();
    let mut tallied = Vec::new();
    for (id, _) in state.db.list_under(Kind::DeploymentIntentGroup, &[])? {
        let dig = DigRef::from_path(&id.path);
        let read = state.orchestrator.tallied(&dig, &unreachable);
        if let Some((dig_state, context)) = still_there(read)? {
            tallied.push((dig, dig_state, context));
        }
    }
    let digs: Vec<DigEntry> = tallied
        .iter()
        .map(|(dig, dig_state, context)| DigEntry::of(dig, dig_state, context.as_ref()))
        .collect();
    let mut placed: BTreeMap<&ClusterRef, BTreeSet<&str>> = BTreeMap::new();
    for dig in digs.iter().filter(|dig| dig.places()) {
        for cluster in &dig.clusters {
            placed.entry(*cluster).or_default().insert(&dig.key);
        }
    }
    let overview = Overview {
        clusters: clusters(state, &placed, &healths)?,
        controllers: controllers(state)?,
        cluster_deployments: cluster_deployments(state)?,
        digs,
    };
    Ok(axum::Json(overview).into_response())
}

/// An app's resources on one cluster, summed up.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Cell<'a> {
    app: &'a str,
    cluster: &'a ClusterRef,
    /// The worst of its resources' deployed states: Failed, then Pending,
    /// then Deleted; Applied when all are.
    deployed: Deployed,
    /// Ready when every resource is.
    ready: Readiness,
    resources: usize,
    ready_resources: usize,
    failed_resources: usize,
    connectivity: CellConnectivity,
}

impl<'a> Cell<'a> {
    fn of(tallied: &'a TalliedContext, app: &'a StoredApp, cluster: &'a ClusterRef) -> Self {
        let resources = app.resources_on(cluster).len();
        let tally = tallied
            .tallies
            .get(&app.name)
            .and_then(|cells| cells.get(cluster))
            .copied()
            .unwrap_or_default();
        let pending = tally.pending + resources.saturating_sub(tally.recorded);
        let deployed = if tally.failed > 0 {
            Deployed::Failed
        } else if pending > 0 {
            Deployed::Pending
        } else if tally.deleted > 0 {
            Deployed::Deleted
        } else {
            Deployed::Applied
        };
        Cell {
            app: &app.name,
            cluster,
            deployed,
            ready: if tally.ready == resources {
                Readiness::Ready
            } else {
                Readiness::NotReady
            },
            resources,
            ready_resources: tally.ready,
            failed_resources: tally.failed,
            connectivity: tallied.connectivity.get(cluster).into(),
        }
    }
}

/// Whether rsync reaches a cell's cluster, as the status shows it, or
/// `Unknown` before it has tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
enum CellConnectivity {
    Available,
    Retrying,
    Unknown,
}

impl From<Option<&Connectivity>> for CellConnectivity {
    fn from(recorded: Option<&Connectivity>) -> Self {
        match recorded {
            Some(Connectivity::Available) => CellConnectivity::Available,
            Some(Connectivity::Retrying) => CellConnectivity::Retrying,
            None => CellConnectivity::Unknown,
        }
    }
}

/// A DIG with its state and its grid of apps × clusters.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DigEntry<'a> {
    project: &'a str,
    composite_app: &'a str,
    composite_app_version: &'a str,
    name: &'a str,
    key: String,
    state: DeployState,
    revision: u64,
    actions: &'a [StateAction],
    #[serde(skip_serializing_if = "Option::is_none")]
    rollout: Option<&'a wasmco_core::wire::RolloutProgress>,
    apps: Vec<&'a str>,
    clusters: BTreeSet<&'a ClusterRef>,
    cells: Vec<Cell<'a>>,
    ready_cells: usize,
}

impl<'a> DigEntry<'a> {
    fn of(dig: &'a DigRef, state: &'a DigState, tallied: Option<&'a TalliedContext>) -> Self {
        let mut entry = DigEntry {
            project: &dig.project,
            composite_app: &dig.composite_app,
            composite_app_version: &dig.version,
            name: &dig.name,
            key: dig.key(),
            state: state.state,
            revision: state.revision,
            actions: &state.actions,
            rollout: state.rollout.as_ref(),
            apps: Vec::new(),
            clusters: BTreeSet::new(),
            cells: Vec::new(),
            ready_cells: 0,
        };
        if let Some(tallied) = tallied {
            for app in &tallied.context.apps {
                entry.apps.push(&app.name);
                for placement in &app.placement {
                    entry.clusters.insert(&placement.cluster);
                    entry.cells.push(Cell::of(tallied, app, &placement.cluster));
                }
            }
        }
        entry.ready_cells = entry
            .cells
            .iter()
            .filter(|c| c.ready == Readiness::Ready)
            .count();
        entry
    }

    /// Whether its objects are (meant to be) on its clusters.
    fn places(&self) -> bool {
        matches!(
            self.state,
            DeployState::Instantiated | DeployState::Updated | DeployState::InstantiateStopped
        )
    }
}

fn clusters(
    state: &AppState,
    placed: &BTreeMap<&ClusterRef, BTreeSet<&str>>,
    healths: &BTreeMap<ClusterRef, ClusterHealth>,
) -> Result<Vec<Value>, ApiError> {
    let mut labels: BTreeMap<ClusterRef, Vec<String>> = BTreeMap::new();
    for (id, body) in state.db.list_under(Kind::ClusterLabel, &[])? {
        if let ([provider, cluster, ..], Some(label)) =
            (id.path.as_slice(), body["clusterLabel"].as_str())
        {
            labels
                .entry(ClusterRef::new(provider.as_str(), cluster.as_str()))
                .or_default()
                .push(label.to_owned());
        }
    }
    let mut clusters = Vec::new();
    for (id, body) in state.db.list_under(Kind::Cluster, &[])? {
        let [provider, name] = id.path.as_slice() else {
            continue;
        };
        let cluster = ClusterRef::new(provider.as_str(), name.as_str());
        let mut entry = json!({
            "clusterProvider": provider,
            "cluster": name,
            "description": body["metadata"]["description"],
            "labels": labels.remove(&cluster).unwrap_or_default(),
            "digs": placed.get(&cluster).cloned().unwrap_or_default(),
            "state": "Unknown",
        });
        if let Some(health) = healths.get(&cluster) {
            entry["state"] = json!(health.state);
            entry["since"] = json!(health.since);
            entry["version"] = json!(health.version);
            entry["lastError"] = json!(health.last_error);
        }
        clusters.push(entry);
    }
    Ok(clusters)
}

/// Every cluster deployment's status, as `…/cluster-deployments/{d}/status`
/// answers it.
fn cluster_deployments(state: &AppState) -> Result<Vec<Value>, ApiError> {
    let deployments = state.orchestrator.cluster_deployments();
    let mut statuses = Vec::new();
    for (id, _) in state.db.list_under(Kind::ClusterDeployment, &[])? {
        let Some(target) = ClusterDeploymentRef::of(&id) else {
            continue;
        };
        if let Some(status) = still_there(deployments.status(&target))? {
            statuses.push(json!(status));
        }
    }
    Ok(statuses)
}

/// A read of something listed a moment ago: `None` when it was deleted in
/// between.
fn still_there<T>(read: Result<T, OrchestratorError>) -> Result<Option<T>, ApiError> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(OrchestratorError::Db(DbError::NotFound(_))) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

fn controllers(state: &AppState) -> Result<Vec<Value>, ApiError> {
    let mut history = state.runtime.metrics().history();
    let mut controllers = Vec::new();
    for (id, body) in state.db.list(Kind::Controller, &[])? {
        let Some(name) = id.path.last().cloned() else {
            continue;
        };
        let calls = history.remove(&name).unwrap_or_default();
        controllers.push(json!({
            "name": name,
            "type": body["spec"]["type"],
            "priority": body["spec"]["priority"],
            "limits": body["spec"]["limits"],
            "builtIn": false,
            "calls": calls,
        }));
    }
    // The host's own controllers (generic placement, Helm's renderer) are
    // not registered resources; they show once they have been called.
    for (name, calls) in history {
        controllers.push(json!({"name": name, "builtIn": true, "calls": calls}));
    }
    Ok(controllers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How a state serialises.
    fn spelled(state: impl Serialize) -> String {
        match serde_json::to_value(state) {
            Ok(Value::String(text)) => text,
            other => panic!("a state serialises as a string, not {other:?}"),
        }
    }

    #[test]
    fn a_cells_states_are_spelled_as_the_status_api_spells_them() {
        for deployed in [
            Deployed::Pending,
            Deployed::Applied,
            Deployed::Failed,
            Deployed::Deleted,
            Deployed::Released,
        ] {
            assert_eq!(spelled(deployed), deployed.as_str());
        }
        for ready in [Readiness::Ready, Readiness::NotReady] {
            assert_eq!(spelled(ready), ready.as_str());
        }
        for recorded in [Connectivity::Available, Connectivity::Retrying] {
            assert_eq!(
                spelled(CellConnectivity::from(Some(&recorded))),
                recorded.as_str()
            );
        }
        assert_eq!(spelled(CellConnectivity::from(None)), "Unknown");
    }
}
