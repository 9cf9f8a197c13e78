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
use wasmco_orchestrator::{ClusterDeploymentRef, DigRef, OrchestratorError, SyncedContext};
use wasmco_store::appcontext::{Connectivity, DeployState, Deployed, DigState, Readiness};
use wasmco_store::db::DbError;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /v2/overview`.
pub async fn overview(state: AppState) -> Result<Response, ApiError> {
    let body = crate::work::off_the_workers(move || gather(&state)).await??;
    Ok(axum::Json(body).into_response())
}

fn gather(state: &AppState) -> Result<Value, ApiError> {
    let mut placed: BTreeMap<ClusterRef, BTreeSet<String>> = BTreeMap::new();
    let mut digs = Vec::new();
    for (id, _) in state.db.list_under(Kind::DeploymentIntentGroup, &[])? {
        let dig = DigRef::from_path(&id.path);
        let Some((dig_state, synced)) = still_there(state.orchestrator.status(&dig))? else {
            continue;
        };
        let grid = synced.as_ref().map(Grid::of).unwrap_or_default();
        if matches!(
            dig_state.state,
            DeployState::Instantiated | DeployState::Updated | DeployState::InstantiateStopped
        ) {
            for cluster in &grid.clusters {
                placed.entry(cluster.clone()).or_default().insert(dig.key());
            }
        }
        digs.push(dig_entry(&dig, &dig_state, grid));
    }
    Ok(json!({
        "digs": digs,
        "clusters": clusters(state, &placed)?,
        "controllers": controllers(state)?,
        "clusterDeployments": cluster_deployments(state)?,
    }))
}

/// An app's resources on one cluster, summed up.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Cell {
    app: String,
    cluster: ClusterRef,
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

/// A DIG's apps × clusters.
#[derive(Default)]
struct Grid {
    apps: Vec<String>,
    clusters: BTreeSet<ClusterRef>,
    cells: Vec<Cell>,
}

impl Grid {
    fn of(synced: &SyncedContext) -> Grid {
        let mut grid = Grid::default();
        for app in &synced.context.apps {
            grid.apps.push(app.name.clone());
            for placement in &app.placement {
                let cluster = &placement.cluster;
                grid.clusters.insert(cluster.clone());
                let (mut ready, mut failed, mut pending, mut deleted, mut resources) =
                    (0, 0, 0, 0, 0);
                for resource in app.resources_on(cluster) {
                    resources += 1;
                    let recorded = synced.statuses.get(&(
                        app.name.clone(),
                        cluster.clone(),
                        resource.key.to_string(),
                    ));
                    match recorded.map_or(Deployed::Pending, |r| r.deployed) {
                        Deployed::Failed => failed += 1,
                        Deployed::Pending => pending += 1,
                        Deployed::Deleted | Deployed::Released => deleted += 1,
                        Deployed::Applied => {}
                    }
                    if recorded.is_some_and(|r| r.ready == Readiness::Ready) {
                        ready += 1;
                    }
                }
                let deployed = if failed > 0 {
                    Deployed::Failed
                } else if pending > 0 {
                    Deployed::Pending
                } else if deleted > 0 {
                    Deployed::Deleted
                } else {
                    Deployed::Applied
                };
                grid.cells.push(Cell {
                    app: app.name.clone(),
                    cluster: cluster.clone(),
                    deployed,
                    ready: if ready == resources {
                        Readiness::Ready
                    } else {
                        Readiness::NotReady
                    },
                    resources,
                    ready_resources: ready,
                    failed_resources: failed,
                    connectivity: synced.connectivity.get(cluster).into(),
                });
            }
        }
        grid
    }
}

fn dig_entry(dig: &DigRef, state: &DigState, grid: Grid) -> Value {
    let ready_cells = grid
        .cells
        .iter()
        .filter(|c| c.ready == Readiness::Ready)
        .count();
    json!({
        "project": dig.project,
        "compositeApp": dig.composite_app,
        "compositeAppVersion": dig.version,
        "name": dig.name,
        "key": dig.key(),
        "state": state.state,
        "revision": state.revision,
        "actions": state.actions,
        "apps": grid.apps,
        "clusters": grid.clusters,
        "cells": grid.cells,
        "readyCells": ready_cells,
    })
}

fn clusters(
    state: &AppState,
    placed: &BTreeMap<ClusterRef, BTreeSet<String>>,
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
    let healths: BTreeMap<ClusterRef, _> =
        state.orchestrator.cluster_healths()?.into_iter().collect();
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
