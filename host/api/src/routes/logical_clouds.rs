//! A logical cloud's routes beyond the table: its actions, its status and
//! a cluster reference's kubeconfig.

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::routing::{get, post};

use wasmco_core::Kind;

use crate::deployments::StatusQuery;
use crate::error::bad_query;
use crate::logical_clouds::{self, CloudAction};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    let lc = Kind::LogicalCloud.item_route();
    let mut router = Router::new();
    for action in CloudAction::ALL {
        router = router.route(
            &format!("{lc}/{}", action.route()),
            post(move |State(s): State<AppState>, path, request: Request| {
                logical_clouds::act(s, action, path, request)
            }),
        );
    }
    router
        .route(
            &format!("{lc}/status"),
            get(
                |State(s): State<AppState>, path, query: Result<Query<StatusQuery>, _>| async move {
                    let query = query.map_err(bad_query)?;
                    logical_clouds::status(s, path, query).await
                },
            ),
        )
        .route(
            &format!(
                "{}/kubeconfig",
                Kind::LogicalCloudClusterReference.item_route()
            ),
            get(|State(s): State<AppState>, path| logical_clouds::kubeconfig(s, path)),
        )
}
