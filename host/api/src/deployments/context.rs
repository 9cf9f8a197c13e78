//! `GET …/{dig}/context`: what instantiate computed, per app and cluster.

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use wasmco_core::wire::{ContextApp, ContextBody, ContextCluster};
use wasmco_orchestrator::DigRef;
use wasmco_store::appcontext::{DigState, StoredContext};

use super::dig::{DigPath, state_body};
use crate::error::ApiError;
use crate::state::AppState;

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
