//! A deployment intent group's routes beyond the table: its actions, its
//! status and context, and the intents controllers declare under it.

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::HeaderMap;
use axum::routing::{any, get, post};

use wasmco_core::Kind;

use crate::deployments::{self, ContextQuery, DigAction, DigPath, StatusQuery};
use crate::error::bad_query;
use crate::intents;
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    let dig = Kind::DeploymentIntentGroup.item_route();
    let mut router = Router::new();
    for action in DigAction::ALL {
        router = router.route(
            &format!("{dig}/{}", action.route()),
            post(
                move |State(s): State<AppState>, path: Path<DigPath>, request: Request| {
                    deployments::act(s, action, path, request)
                },
            ),
        );
    }
    for (name, action) in deployments::ROLLOUT_ACTIONS {
        router = router.route(
            &format!("{dig}/rollout/{name}"),
            post(
                move |State(s): State<AppState>, path: Path<DigPath>, request: Request| {
                    deployments::act_on_rollout(s, action, path, request)
                },
            ),
        );
    }
    router
        .route(
            &format!("{dig}/rollout"),
            get(|State(s): State<AppState>, path: Path<DigPath>| deployments::rollout(s, path)),
        )
        .route(
            &format!("{dig}/{{*{}}}", intents::ROUTE_PARAM),
            any(|State(s): State<AppState>, path, request: Request| {
                intents::handle(s, path, request)
            })
            .layer(DefaultBodyLimit::max(Kind::Intent.info().max_body)),
        )
        .route(
            &format!("{dig}/status"),
            get(
                |State(s): State<AppState>,
                 path: Path<DigPath>,
                 query: Result<Query<StatusQuery>, _>| async move {
                    let query = query.map_err(bad_query)?;
                    deployments::status(s, path, query).await
                },
            ),
        )
        .route(
            &format!("{dig}/context"),
            get(
                |State(s): State<AppState>,
                 path: Path<DigPath>,
                 query: Result<Query<ContextQuery>, _>,
                 headers: HeaderMap| async move {
                    let query = query.map_err(bad_query)?;
                    deployments::context(s, path, query, headers).await
                },
            ),
        )
}
