//! `GET /v2/hosts`: the hosts sharing this store and what each reconciles.

use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::{ApiError, AppState};

/// `GET /v2/hosts`: every live host (`"self": true` for the one answering)
/// with the targets (DIGs, logical clouds, cluster network sets) it owns.
pub async fn list(state: AppState) -> Result<Response, ApiError> {
    let me = state.hosts.me().id.clone();
    let (live, work) =
        crate::work::off_the_workers(move || (state.hosts.live(), state.orchestrator.sync_work()))
            .await?;
    let live = live.map_err(wasmco_store::db::DbError::from)?;
    let hosts: Vec<serde_json::Value> = live
        .iter()
        .map(|host| {
            let targets: Vec<&String> = work
                .iter()
                .filter(|(_, owner)| **owner == host.id)
                .map(|(target, _)| target)
                .collect();
            json!({
                "id": host.id,
                "address": host.address,
                "started": host.started,
                "self": host.id == me,
                "targets": targets,
            })
        })
        .collect();
    Ok(axum::Json(hosts).into_response())
}
