//! A cluster deployment's routes beyond the table: its actions and status.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::{get, post};

use wasmco_core::Kind;

use crate::cluster_deployments::{self, DeploymentPath};
use crate::state::AppState;
use wasmco_core::wire::ClusterDeploymentAction;

pub(super) fn routes() -> Router<AppState> {
    let item = Kind::ClusterDeployment.item_route();
    let mut router = Router::new();
    for action in ClusterDeploymentAction::ALL {
        router = router.route(
            &format!("{item}/{}", action.route()),
            post(
                move |State(s): State<AppState>, Path(path): Path<DeploymentPath>, body: Bytes| {
                    cluster_deployments::act(s, action, path.into(), body)
                },
            ),
        );
    }
    router.route(
        &format!("{item}/{}", cluster_deployments::STATUS_ROUTE),
        get(
            |State(s): State<AppState>, Path(path): Path<DeploymentPath>| {
                cluster_deployments::status(s, path.into())
            },
        ),
    )
}
