//! A cluster's routes beyond the table: its network actions and status,
//! and its CA, kubeconfigs, bootstrap bundle and CSR signing.

use axum::Router;
use axum::extract::{Query, State};
use axum::routing::{get, post};

use wasmco_core::Kind;

use crate::clusters::{self, NetworkAction};
use crate::deployments::StatusQuery;
use crate::error::bad_query;
use crate::pki;
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    let cluster = Kind::Cluster.item_route();
    let mut router = Router::new();
    for action in NetworkAction::ALL {
        router = router.route(
            &format!("{cluster}/{}", action.route()),
            post(move |State(s): State<AppState>, path| clusters::act(s, action, path)),
        );
    }
    router
        .route(
            &format!("{cluster}/{}", clusters::STATUS_ROUTE),
            get(
                |State(s): State<AppState>, path, query: Result<Query<StatusQuery>, _>| async move {
                    let query = query.map_err(bad_query)?;
                    clusters::status(s, path, query).await
                },
            ),
        )
        .route(
            &format!("{cluster}/ca"),
            post(|State(s): State<AppState>, path, body| pki::create_ca(s, path, body))
                .get(|State(s): State<AppState>, path| pki::get_ca(s, path)),
        )
        .route(
            &format!("{cluster}/admin-kubeconfig"),
            post(|State(s): State<AppState>, path, body| pki::admin_kubeconfig(s, path, body)),
        )
        .route(
            &format!("{cluster}/bootstrap-bundle"),
            post(|State(s): State<AppState>, path, body| pki::bootstrap_bundle(s, path, body)),
        )
        .route(
            &format!("{cluster}/csr"),
            post(|State(s): State<AppState>, path, body| pki::sign_csr(s, path, body)),
        )
}
