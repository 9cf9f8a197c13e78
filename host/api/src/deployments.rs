//! DIG actions (`approve`, `instantiate`, `update`, `rollback`, `terminate`)
//! and reading back the computed context.

use axum::extract::{Path, Query, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use wasmco_core::wire::{
    AppStatus, ClusterStatus, ContextApp, ContextBody, ContextCluster, DeploymentState,
    DeploymentStatus, Gvk, Link, ResourceEntry, Subject,
};
use wasmco_core::{ClusterRef, Resource};
use wasmco_orchestrator::{DigRef, OrchestratorError};
use wasmco_store::appcontext::{Deployed, DigState, Readiness, ResourceStatus, StoredContext};

pub use wasmco_core::wire::DigAction;

use super::error::ApiError;
use super::state::AppState;

/// The path parameters of a DIG.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DigPath {
    project: String,
    composite_app: String,
    composite_app_version: String,
    deployment_intent_group: String,
}

impl From<DigPath> for DigRef {
    fn from(p: DigPath) -> Self {
        DigRef {
            project: p.project,
            composite_app: p.composite_app,
            version: p.composite_app_version,
            name: p.deployment_intent_group,
        }
    }
}

impl From<OrchestratorError> for ApiError {
    fn from(e: OrchestratorError) -> Self {
        match e {
            OrchestratorError::Db(db) => db.into(),
            OrchestratorError::State { .. }
            | OrchestratorError::Deployed(_)
            | OrchestratorError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            OrchestratorError::Input(_)
            | OrchestratorError::Controller(_)
            | OrchestratorError::Tenancy(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
            }
            OrchestratorError::Busy(_) => ApiError::busy(e.to_string()),
            OrchestratorError::Context(wasmco_store::appcontext::ContextError::NoRevision(_)) => {
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "revision", e.to_string())
            }
            OrchestratorError::Context(
                wasmco_store::appcontext::ContextError::Store(
                    wasmco_store::StoreError::Unavailable { .. },
                )
                | wasmco_store::appcontext::ContextError::Fenced(_),
            ) => ApiError::unavailable(e.to_string()),
            OrchestratorError::Context(_) => ApiError::internal(e),
        }
    }
}

fn state_body(dig: &DigRef, state: &DigState) -> DeploymentState {
    state.answer(Subject {
        project: Some(dig.project.clone()),
        composite_app: Some(dig.composite_app.clone()),
        composite_app_version: Some(dig.version.clone()),
        name: dig.name.clone(),
        ..Subject::default()
    })
}

/// The revision a `rollback` body names: EMCO's `{"metadata": {…},
/// "spec": {"revision": "1"}}` (a string there), or `{"revision": 1}`.
fn rollback_revision(bytes: &[u8]) -> Result<u64, ApiError> {
    let body: serde_json::Map<String, Value> = wasmco_core::parse_json(bytes, "body")?;
    let (field, value) = match body.get("spec") {
        Some(spec) => ("spec.revision", spec.get("revision")),
        None => ("revision", body.get("revision")),
    };
    let value = value.ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            field,
            "missing: the revision to roll back to",
        )
    })?;
    let revision = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    };
    revision.filter(|r| *r > 0).ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            field,
            format!("must be a revision number (1 or more), not {value}"),
        )
    })
}

/// Where a `migrate` body sends the DIG: EMCO's `{"spec":
/// {"targetCompositeAppVersion", "targetDeploymentIntentGroup"}}` (older
/// EMCO spelled them `target-composite-app-version`, `target-dig-name`),
/// or that spec alone.
fn migrate_target(bytes: &[u8]) -> Result<(String, String), ApiError> {
    let body: serde_json::Map<String, Value> = wasmco_core::parse_json(bytes, "body")?;
    // emcoctl posts the document's spec alone.
    let spec = match body.get("spec") {
        Some(Value::Object(spec)) => spec,
        Some(_) => {
            return Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                "spec",
                "must be {targetCompositeAppVersion, targetDeploymentIntentGroup}",
            ));
        }
        None => &body,
    };
    let text = |names: [&str; 2]| {
        let found = names.iter().find_map(|n| spec.get(*n));
        match found {
            Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
            _ => Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                format!("spec.{}", names[0]),
                "missing or not a name",
            )),
        }
    };
    Ok((
        text(["targetCompositeAppVersion", "target-composite-app-version"])?,
        text(["targetDeploymentIntentGroup", "target-dig-name"])?,
    ))
}

/// `POST …/{dig}/{action}`.
pub async fn act(
    state: AppState,
    action: DigAction,
    path: Path<DigPath>,
    request: Request,
) -> Result<Response, ApiError> {
    let dig: DigRef = path.0.into();
    let actor = crate::auth::actor(&request);
    let (revision, migrate_to) = match action {
        DigAction::Rollback | DigAction::Migrate => {
            let bytes = axum::body::to_bytes(request.into_body(), 1 << 16)
                .await
                .map_err(|_| ApiError::too_large(1 << 16))?;
            if action == DigAction::Rollback {
                (Some(rollback_revision(&bytes)?), None)
            } else {
                (None, Some(migrate_target(&bytes)?))
            }
        }
        _ => (None, None),
    };
    // A migrate answers with the DIG it moved to.
    let answered = match &migrate_to {
        Some((version, name)) => DigRef {
            version: version.clone(),
            name: name.clone(),
            ..dig.clone()
        },
        None => dig.clone(),
    };
    let orchestrator = state.orchestrator.clone();
    let target = dig.clone();
    let new_state = crate::work::off_the_workers(move || match action {
        DigAction::Approve => orchestrator.approve(&target),
        DigAction::Instantiate => orchestrator.instantiate(&target, actor),
        DigAction::Update => orchestrator.update(&target, actor),
        DigAction::Rollback => orchestrator.rollback(&target, revision.unwrap_or_default(), actor),
        DigAction::Terminate => orchestrator.terminate(&target),
        DigAction::Stop => orchestrator.stop(&target),
        DigAction::Migrate => {
            let (version, name) = migrate_to.unwrap_or_default();
            orchestrator.migrate(&target, &version, &name, actor)
        }
    })
    .await??;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(state_body(&answered, &new_state)),
    )
        .into_response())
}

/// Filters of `GET …/{dig}/context`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextQuery {
    app: Option<String>,
    cluster: Option<String>,
    revision: Option<u64>,
}

/// `GET …/{dig}/context`: per app, its clusters and each cluster's final
/// manifests; JSON, or YAML with `Accept: application/yaml`.
pub async fn context(
    state: AppState,
    path: Path<DigPath>,
    query: Query<ContextQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let dig: DigRef = path.0.into();
    let orchestrator = state.orchestrator.clone();
    let target = dig.clone();
    let revision = query.revision;
    let (dig_state, context) =
        crate::work::off_the_workers(move || orchestrator.context(&target, revision)).await??;
    let body = context_body(&dig, &dig_state, &context, &query.0);
    let wants_yaml = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("yaml"));
    if wants_yaml {
        let yaml = serde_norway::to_string(&body).map_err(ApiError::internal)?;
        return Ok(([(header::CONTENT_TYPE, "application/yaml")], yaml).into_response());
    }
    Ok(axum::Json(body).into_response())
}

fn context_body(
    dig: &DigRef,
    state: &DigState,
    context: &StoredContext,
    query: &ContextQuery,
) -> ContextBody {
    let apps = context
        .apps
        .iter()
        .filter(|app| query.app.as_deref().is_none_or(|a| a == app.name))
        .map(|app| ContextApp {
            name: app.name.clone(),
            clusters: app
                .placement
                .iter()
                .filter(|p| query.cluster.as_deref().is_none_or(|c| p.cluster.is(c)))
                .map(|p| ContextCluster {
                    cluster_provider: p.cluster.provider.clone(),
                    cluster: p.cluster.cluster.clone(),
                    group: p.group.clone(),
                    resources: app
                        .resources_on(&p.cluster)
                        .into_iter()
                        .map(|r| r.manifest.clone())
                        .collect(),
                })
                .collect(),
            hooks: app.hooks.iter().map(Into::into).collect(),
        })
        .collect();
    let mut deployment = state_body(dig, state);
    deployment.revision = context.meta.revision;
    ContextBody {
        deployment,
        app_order: context.meta.app_order.clone(),
        dependencies: context.meta.dependencies.clone(),
        apps,
    }
}

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
