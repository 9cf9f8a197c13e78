//! The routes of the kind table: each kind's collection and items.

use axum::Router;
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::routing::{MethodRouter, get};

use wasmco_core::Kind;

use crate::auth;
use crate::error::bad_query;
use crate::resources::{self, ListQuery, PathValues};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    let mut router = Router::new();
    for kind in Kind::ALL.into_iter().filter(|k| !k.is_declared()) {
        router = router
            .route(&kind.collection_route(), collection_routes(kind))
            .route(&kind.item_route(), item_routes(kind));
    }
    router
}

fn collection_routes(kind: Kind) -> MethodRouter<AppState> {
    let limit = DefaultBodyLimit::max(kind.info().max_body);
    get(
        move |State(s): State<AppState>,
              principal: Option<axum::Extension<auth::Principal>>,
              path: PathValues,
              query: Result<Query<ListQuery>, _>| async move {
            let query = query.map_err(bad_query)?;
            let principal = principal.map_or(auth::Principal::Admin, |p| p.0);
            resources::list(s, &principal, kind, path, query).await
        },
    )
    .post(
        move |State(s): State<AppState>, path: PathValues, request: Request| {
            resources::create(s, kind, path, request)
        },
    )
    .layer(limit)
}

fn item_routes(kind: Kind) -> MethodRouter<AppState> {
    let limit = DefaultBodyLimit::max(kind.info().max_body);
    get(
        move |State(s): State<AppState>,
              path: PathValues,
              query: Result<Query<resources::ItemQuery>, _>| async move {
            let query = query.map_err(bad_query)?;
            resources::get_one(s, kind, path, query).await
        },
    )
    .put(
        move |State(s): State<AppState>, path: PathValues, request: Request| {
            resources::update(s, kind, path, request)
        },
    )
    .delete(move |State(s): State<AppState>, path: PathValues| resources::delete(s, kind, path))
    .layer(limit)
}
