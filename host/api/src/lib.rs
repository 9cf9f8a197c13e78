//! The REST API (`/v2`), EMCO's paths and bodies.

pub mod auth;
mod ca_certs;
mod clusters;
mod deployments;
mod error;
mod hosts;
mod intents;
mod logical_clouds;
pub mod metrics;
pub mod openapi;
mod overview;
mod pki;
mod resources;
mod state;
mod tokens;
pub mod ui;
mod work;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::routing::{MethodRouter, get, post};
use resources::{ListQuery, PathValues};

use wasmco_core::Kind;

pub use error::ApiError;
pub use state::AppState;
pub use work::WorkPool;

/// The router that serves `/metrics` alone, unauthenticated: for
/// `--metrics-listen`, an address only the scraper reaches.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(s): State<AppState>| metrics::serve(s)),
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
    routes(state)
        .route_layer(axum::middleware::from_fn(auth::authorize))
        .layer(axum::middleware::from_fn_with_state(
            gate,
            auth::authenticate,
        ))
        .merge(ui::router())
}

fn routes(state: AppState) -> Router {
    let mut router = Router::new()
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
            get(|State(s): State<AppState>| metrics::serve(s)),
        )
        .route("/v2/hosts", get(|State(s): State<AppState>| hosts::list(s)))
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
        );
    for kind in Kind::ALL.into_iter().filter(|k| !k.is_declared()) {
        router = router
            .route(&kind.collection_route(), collection_routes(kind))
            .route(&kind.item_route(), item_routes(kind));
    }
    let dig = Kind::DeploymentIntentGroup.item_route();
    for action in deployments::DigAction::ALL {
        router = router.route(
            &format!("{dig}/{}", action.route()),
            post(
                move |State(s): State<AppState>,
                      path: axum::extract::Path<deployments::DigPath>,
                      request: Request| {
                    deployments::act(s, action, path, request)
                },
            ),
        );
    }
    router = router.route(
        &format!("{dig}/{{*{}}}", intents::ROUTE_PARAM),
        axum::routing::any(|State(s): State<AppState>, path, request: Request| {
            intents::handle(s, path, request)
        })
        .layer(DefaultBodyLimit::max(Kind::Intent.info().max_body)),
    );
    router = router.route(
        &format!("{dig}/status"),
        get(
            |State(s): State<AppState>,
             path: axum::extract::Path<deployments::DigPath>,
             query: Result<Query<deployments::StatusQuery>, _>| async move {
                let query = query.map_err(bad_query)?;
                deployments::status(s, path, query).await
            },
        ),
    );
    router = router.route(
        &format!("{dig}/context"),
        get(
            |State(s): State<AppState>,
             path: axum::extract::Path<deployments::DigPath>,
             query: Result<Query<deployments::ContextQuery>, _>,
             headers: HeaderMap| async move {
                let query = query.map_err(bad_query)?;
                deployments::context(s, path, query, headers).await
            },
        ),
    );
    let lc = Kind::LogicalCloud.item_route();
    for action in logical_clouds::CloudAction::ALL {
        router = router.route(
            &format!("{lc}/{}", action.route()),
            post(move |State(s): State<AppState>, path, request: Request| {
                logical_clouds::act(s, action, path, request)
            }),
        );
    }
    router = router
        .route(
            &format!("{lc}/status"),
            get(
                |State(s): State<AppState>,
                 path,
                 query: Result<Query<deployments::StatusQuery>, _>| async move {
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
        );
    router = ca_cert_routes::<ca_certs::ProviderCertPath>(router, Kind::CaCert);
    router = ca_cert_routes::<ca_certs::ProjectCertPath>(router, Kind::ProjectCaCert);
    let cluster = Kind::Cluster.item_route();
    for action in clusters::NetworkAction::ALL {
        router = router.route(
            &format!("{cluster}/{}", action.route()),
            post(move |State(s): State<AppState>, path| clusters::act(s, action, path)),
        );
    }
    router = router
        .route(
            &format!("{cluster}/{}", clusters::STATUS_ROUTE),
            get(
                |State(s): State<AppState>,
                 path,
                 query: Result<Query<deployments::StatusQuery>, _>| async move {
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
        );
    router
        .fallback(|method: Method, uri: Uri| async move {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no route for {method} {}", uri.path()),
            )
        })
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} is not allowed on {}", uri.path()),
            )
        })
        .with_state(state)
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

/// A query string the handler's parameters refuse, as a 400 naming why.
fn bad_query(rejection: axum::extract::rejection::QueryRejection) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        format!("bad query: {}", rejection.body_text()),
    )
}

/// A caCert kind's stage routes: `{item}/{stage}/{action}` and
/// `{item}/{stage}/status`, its path read as `P`.
fn ca_cert_routes<P>(mut router: Router<AppState>, kind: Kind) -> Router<AppState>
where
    P: serde::de::DeserializeOwned + Into<wasmco_orchestrator::CaCertRef> + Send + 'static,
{
    for stage in ca_certs::STAGES {
        let stage_route = format!("{}/{}", kind.item_route(), stage.route());
        for action in ca_certs::CertAction::ALL {
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
                      query: Result<Query<deployments::StatusQuery>, _>| async move {
                    let query = query.map_err(bad_query)?;
                    ca_certs::status(s, path.into(), stage, query).await
                },
            ),
        );
    }
    router
}
