//! The caCerts' stage routes, of a cluster provider's and of a project's.

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::routing::{get, post};

use wasmco_core::Kind;

use crate::ca_certs::{self, CertAction, ProjectCertPath, ProviderCertPath};
use crate::deployments::StatusQuery;
use crate::error::bad_query;
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    let router = stage_routes::<ProviderCertPath>(Router::new(), Kind::CaCert);
    stage_routes::<ProjectCertPath>(router, Kind::ProjectCaCert)
}

/// A caCert kind's stage routes: `{item}/{stage}/{action}` and
/// `{item}/{stage}/status`, its path read as `P`.
fn stage_routes<P>(mut router: Router<AppState>, kind: Kind) -> Router<AppState>
where
    P: serde::de::DeserializeOwned + Into<wasmco_orchestrator::CaCertRef> + Send + 'static,
{
    for stage in ca_certs::STAGES {
        let stage_route = format!("{}/{}", kind.item_route(), stage.route());
        for action in CertAction::ALL {
            router = router.route(
                &format!("{stage_route}/{}", action.route()),
                post(
                    move |State(s): State<AppState>, Path(path): Path<P>, request: Request| {
                        ca_certs::act(s, path.into(), stage, action, request)
                    },
                ),
            );
        }
        router = router.route(
            &format!("{stage_route}/status"),
            get(
                move |State(s): State<AppState>,
                      Path(path): Path<P>,
                      query: Result<Query<StatusQuery>, _>| async move {
                    let query = query.map_err(bad_query)?;
                    ca_certs::status(s, path.into(), stage, query).await
                },
            ),
        );
    }
    router
}
