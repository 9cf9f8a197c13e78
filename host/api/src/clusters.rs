//! `GET …/clusters/{cluster}/status`: whether rsync reaches the cluster,
//! as its probe last saw it.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use wasmco_store::appcontext::Reachability;

use crate::error::ApiError;
use crate::pki::ClusterPath;
use crate::state::AppState;

/// The route, relative to a cluster's item path.
pub const STATUS_ROUTE: &str = "status";

/// The cluster's health: `Reachable`, `Unreachable`, or `Unknown` before
/// its first probe; since when, the last error and the server's version.
pub async fn status(state: AppState, Path(path): Path<ClusterPath>) -> Result<Response, ApiError> {
    let orchestrator = state.orchestrator.clone();
    let (provider, cluster) = path.names();
    let (provider, cluster) = (provider.to_owned(), cluster.to_owned());
    let health = tokio::task::spawn_blocking({
        let (provider, cluster) = (provider.clone(), cluster.clone());
        move || orchestrator.cluster_health(&provider, &cluster)
    })
    .await
    .map_err(ApiError::internal)??;
    let mut body = json!({"clusterProvider": provider, "cluster": cluster});
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
    Ok(axum::Json(body).into_response())
}
