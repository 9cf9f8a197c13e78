//! The routers the servers run: the API behind the token check and the
//! audit log, and `/metrics` alone for a scraper's own address.

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use crate::state::AppState;
use crate::{auth, metrics, routes, ui};

/// The router that serves `/metrics` alone, unauthenticated: for
/// `--metrics-listen`, an address only the scraper reaches.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(s): State<AppState>| metrics::serve(s.metrics, s.orchestrator)),
        )
        .with_state(state)
}

/// The router with every route of the kind table, `/healthz`, the OpenAPI
/// document, `/metrics`, the token routes and the status page's overview,
/// behind the token check and the audit log; and the status page's files,
/// which are not.
pub fn router(state: AppState) -> Router {
    let gate = auth::Gate {
        tokens: state.tokens.clone(),
        audit: state.audit.clone(),
        http: state.metrics.http().clone(),
    };
    routes::routes(state)
        .route_layer(axum::middleware::from_fn(auth::authorize))
        .layer(axum::middleware::from_fn_with_state(
            gate,
            auth::authenticate,
        ))
        .merge(ui::router())
}
