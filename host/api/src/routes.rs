//! Every route of the API, one router per area merged into one, with the
//! answers for a path no route has and a method a route does not take.

use axum::Router;
use axum::http::{Method, StatusCode, Uri};

use crate::error::ApiError;
use crate::state::AppState;

mod ca_certs;
mod cluster_deployments;
mod clusters;
mod digs;
mod host;
mod logical_clouds;
mod table;

/// Every route, with `state`.
pub(crate) fn routes(state: AppState) -> Router {
    Router::new()
        .merge(host::routes())
        .merge(table::routes())
        .merge(digs::routes())
        .merge(logical_clouds::routes())
        .merge(ca_certs::routes())
        .merge(clusters::routes())
        .merge(cluster_deployments::routes())
        .fallback(|method: Method, uri: Uri| async move { ApiError::no_route(&method, uri.path()) })
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} is not allowed on {}", uri.path()),
            )
        })
        .with_state(state)
}
