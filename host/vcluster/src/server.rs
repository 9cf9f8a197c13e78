//! The HTTP side of a virtual cluster: discovery, object paths, verbs and
//! content types as the Kubernetes API server has them, and watches.

mod discovery;
mod request;
mod response;
mod shared;
mod verbs;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;

pub(crate) use shared::Shared;

use discovery::discovery;
use request::{Params, target};
use response::{failure, injected_failure, json_response};
use verbs::Request;

/// The router of one virtual cluster.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(dispatch).with_state(shared)
}

/// Answers one request: counted, delayed or failed as the cluster's
/// behaviour says, then discovery or a verb on an object path.
async fn dispatch(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    use std::sync::atomic::Ordering;
    shared.requests.fetch_add(1, Ordering::Relaxed);
    if uri.path() == "/version" {
        shared.version_requests.fetch_add(1, Ordering::Relaxed);
    }
    if params.watches() {
        shared.watch_requests.fetch_add(1, Ordering::Relaxed);
    }
    let (latency, fail_with) = {
        let behaviour = shared.behaviour();
        (behaviour.latency, behaviour.fail_with)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(code) = fail_with {
        return injected_failure(code);
    }
    let segments: Vec<&str> = uri
        .path()
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    if method == Method::GET
        && let Some(discovery) = discovery(&shared, &segments)
    {
        return json_response(StatusCode::OK, &discovery);
    }
    let target = match target(&shared, &segments) {
        Ok(target) => target,
        Err(error) => return failure(&error),
    };
    let request = Request {
        shared: &shared,
        target: &target,
        params: &params,
        headers: &headers,
        body: &body,
    };
    request
        .handle(&method)
        .unwrap_or_else(|error| failure(&error))
}

/// Binds `listen` and serves the virtual cluster until the runtime stops.
pub(super) async fn bind(
    listen: SocketAddr,
) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}
