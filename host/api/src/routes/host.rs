//! The host's own routes: health, the OpenAPI document, metrics, the hosts
//! sharing the store, the status page's overview and the tokens.

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;
use crate::{gitops, hosts, metrics, openapi, overview, tokens};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/healthz",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .route(
            "/v2/openapi.json",
            get(|State(s): State<AppState>| async move {
                let catalog = s.orchestrator.intent_catalog().map_err(ApiError::from)?;
                Ok::<_, ApiError>(axum::Json(openapi::document_with(&catalog)))
            }),
        )
        .route(
            "/metrics",
            get(|State(s): State<AppState>| metrics::serve(s.metrics, s.orchestrator)),
        )
        .route("/v2/hosts", get(|State(s): State<AppState>| hosts::list(s)))
        .route(
            "/v2/gitops",
            get(|State(s): State<AppState>| gitops::status(s)),
        )
        .route(
            "/v2/overview",
            get(|State(s): State<AppState>| overview::overview(s)),
        )
        .route(
            "/v2/tokens",
            get(|State(s): State<AppState>| tokens::list(s))
                .post(|State(s): State<AppState>, body| tokens::issue(s, body)),
        )
        .route(
            "/v2/tokens/{token}",
            get(|State(s): State<AppState>, name| tokens::get_one(s, name))
                .delete(|State(s): State<AppState>, name| tokens::revoke(s, name)),
        )
}
