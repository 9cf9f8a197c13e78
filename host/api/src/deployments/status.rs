//! `GET …/{dig}/status`, and the EMCO-shaped status every deployment
//! (a logical cloud's, a cluster's networks', a caCert stage's) answers.

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use serde::Deserialize;

use wasmco_core::wire::{
    AppStatus, ClusterStatus, DeploymentState, DeploymentStatus, Gvk, Link, ResourceEntry,
};
use wasmco_core::{ClusterRef, Resource};
use wasmco_orchestrator::DigRef;
use wasmco_store::appcontext::{Deployed, Readiness, ResourceStatus};

use super::dig::{DigPath, state_body};
use crate::error::ApiError;
use crate::state::AppState;

/// Query of `GET …/{dig}/status`, as EMCO has it: `status`, `output`,
/// `type` (`rsync` or `cluster`: wasmco reads both from the cluster, so
/// they answer the same), and the filters `apps`, `clusters`, `resources`
/// (each repeated or comma-separated; `app`, `cluster`, `resource` too).
#[derive(Debug, Default, Deserialize)]
#[serde(try_from = "Vec<(String, String)>")]
pub struct StatusQuery {
    status: Option<String>,
    output: Option<String>,
    apps: Vec<String>,
    clusters: Vec<String>,
    resources: Vec<String>,
}

impl TryFrom<Vec<(String, String)>> for StatusQuery {
    type Error = String;

    fn try_from(pairs: Vec<(String, String)>) -> Result<Self, String> {
        let mut query = StatusQuery::default();
        for (key, value) in pairs {
            let list = match key.as_str() {
                "status" | "output" => {
                    let slot = if key == "status" {
                        &mut query.status
                    } else {
                        &mut query.output
                    };
                    if slot.replace(value).is_some() {
                        return Err(format!("{key} is given twice"));
                    }
                    continue;
                }
                "type" if matches!(value.as_str(), "rsync" | "cluster") => continue,
                "type" => return Err(format!("type {value:?} is not rsync or cluster")),
                // EMCO's instance of a status query: one status per DIG here.
                "instance" => continue,
                "app" | "apps" => &mut query.apps,
                "cluster" | "clusters" => &mut query.clusters,
                "resource" | "resources" => &mut query.resources,
                other => {
                    return Err(format!(
                        "unknown parameter {other:?} (status, output, type, apps, clusters, resources)"
                    ));
                }
            };
            list.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned),
            );
        }
        Ok(query)
    }
}

impl StatusQuery {
    fn wants_app(&self, app: &str) -> bool {
        self.apps.is_empty() || self.apps.iter().any(|a| a == app)
    }

    fn wants_cluster(&self, cluster: &ClusterRef) -> bool {
        self.clusters.is_empty() || self.clusters.iter().any(|c| cluster.is(c))
    }

    fn wants_resource(&self, name: &str) -> bool {
        self.resources.is_empty() || self.resources.iter().any(|r| r == name)
    }
}

/// How much of the status `output=` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatusOutput {
    /// Counts only.
    Summary,
    /// Every resource's state.
    All,
    /// Every resource's state, failure messages and drift.
    Detail,
}

/// A [`StatusQuery`] whose `status` and `output` were checked.
#[derive(Debug)]
pub struct StatusView {
    ready: bool,
    output: StatusOutput,
    filters: StatusQuery,
}

impl StatusQuery {
    /// Refuses an unknown `status` or `output` (before any work is done).
    pub fn checked(self) -> Result<StatusView, ApiError> {
        let ready = match self.status.as_deref() {
            None | Some("deployed") => false,
            Some("ready") => true,
            Some(other) => {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "status",
                    format!("{other:?} is not deployed or ready"),
                ));
            }
        };
        let output = match self.output.as_deref() {
            Some("summary") => StatusOutput::Summary,
            None | Some("all") => StatusOutput::All,
            Some("detail") => StatusOutput::Detail,
            Some(other) => {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "output",
                    format!("{other:?} is not summary, all or detail"),
                ));
            }
        };
        Ok(StatusView {
            ready,
            output,
            filters: self,
        })
    }
}

/// `GET …/{dig}/status`: the DIG's state and, per app, cluster and
/// resource, what rsync did (`status=deployed`) or whether it is ready
/// (`status=ready`); `output=summary` gives the counts only, `detail` adds
/// failure messages.
pub async fn status(
    state: AppState,
    path: Path<DigPath>,
    query: Query<StatusQuery>,
) -> Result<axum::Json<DeploymentStatus>, ApiError> {
    let query = query.0.checked()?;
    let dig: DigRef = path.0.into();
    let orchestrator = state.orchestrator.clone();
    let target = dig.clone();
    let (dig_state, synced) =
        crate::work::off_the_workers(move || orchestrator.status(&target)).await??;
    Ok(axum::Json(status_body(
        state_body(&dig, &dig_state),
        synced.as_ref(),
        &query,
    )))
}

/// One resource's entry in a status.
fn resource_status(
    resource: &Resource,
    recorded: Option<&ResourceStatus>,
    query: &StatusView,
) -> ResourceEntry {
    let detail = query.output == StatusOutput::Detail;
    ResourceEntry {
        gvk: Gvk::of(&resource.api_version, &resource.key.kind),
        name: resource.key.name.clone(),
        deployed_status: (!query.ready).then(|| recorded.map_or(Deployed::Pending, |r| r.deployed)),
        ready_status: query
            .ready
            .then(|| recorded.map_or(Readiness::NotReady, |r| r.ready)),
        message: recorded.and_then(|r| r.message.clone()).filter(|_| detail),
        drift: recorded.and_then(|r| r.drift.clone()).filter(|_| detail),
        events: None,
    }
}

/// The EMCO-shaped status of a deployment (a DIG's, a logical cloud's, a
/// cluster's networks', a caCert stage's).
pub fn status_body(
    deployment: DeploymentState,
    synced: Option<&wasmco_orchestrator::SyncedContext>,
    query: &StatusView,
) -> DeploymentStatus {
    let mut counts = std::collections::BTreeMap::new();
    let apps: Vec<AppStatus> = synced
        .iter()
        .flat_map(|s| &s.context.apps)
        .filter(|app| query.filters.wants_app(&app.name))
        .map(|app| AppStatus {
            name: app.name.clone(),
            clusters: app
                .placement
                .iter()
                .filter(|p| query.filters.wants_cluster(&p.cluster))
                .map(|p| cluster_status(app, &p.cluster, synced, query, &mut counts))
                .collect(),
        })
        .collect();
    let all_ready = !counts.is_empty() && counts.keys().all(|k| k == Readiness::Ready.as_str());
    let (ready_status, ready_counts, deployed_counts) = if query.ready {
        let ready = if all_ready {
            Readiness::Ready
        } else {
            Readiness::NotReady
        };
        (Some(ready), Some(counts), None)
    } else {
        (None, None, Some(counts))
    };
    DeploymentStatus {
        deployment,
        state: None,
        since: None,
        last_error: None,
        version: None,
        ready_status,
        ready_counts,
        deployed_counts,
        apps: (query.output != StatusOutput::Summary).then_some(apps),
        service_discovery: synced.and_then(|s| s.service_discovery.clone()),
        reconciling: synced.is_some_and(|s| s.reconciling),
    }
}

/// `app`'s resources and the hooks that ran on `cluster`; each resource
/// counted under its state in `counts`.
fn cluster_status(
    app: &wasmco_store::appcontext::StoredApp,
    cluster: &ClusterRef,
    synced: Option<&wasmco_orchestrator::SyncedContext>,
    query: &StatusView,
    counts: &mut std::collections::BTreeMap<String, u64>,
) -> ClusterStatus {
    let recorded = |key: &wasmco_core::ResourceKey| {
        synced.and_then(|s| {
            s.statuses
                .get(&(app.name.clone(), cluster.clone(), key.to_string()))
        })
    };
    let resources: Vec<ResourceEntry> = app
        .resources_on(cluster)
        .into_iter()
        .filter(|resource| query.filters.wants_resource(&resource.key.name))
        .map(|resource| resource_status(resource, recorded(&resource.key), query))
        .collect();
    for entry in &resources {
        *counts.entry(entry.state().to_owned()).or_default() += 1;
    }
    // Hooks that ran here, with how they ended; apart from the app's
    // resources (and their counts): one that never runs, a pre-delete hook
    // say, is not a resource waiting to be ready.
    let hooks = app
        .hooks
        .iter()
        .filter_map(|hook| {
            let recorded = recorded(&hook.resource.key)?;
            Some(ResourceEntry {
                events: Some(hook.events.clone()),
                ..resource_status(&hook.resource, Some(recorded), query)
            })
        })
        .collect();
    ClusterStatus {
        cluster_provider: cluster.provider.clone(),
        cluster: cluster.cluster.clone(),
        connectivity: Link::from(synced.and_then(|s| s.connectivity.get(cluster).copied())),
        resources,
        hooks,
    }
}
