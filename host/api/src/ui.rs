//! The status page at `/ui`: static files built into the binary. They load
//! without a token (the page asks for one and keeps it in the tab's
//! session storage); what they show comes from `/v2/overview`, behind it.

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;

const INDEX: &str = include_str!("../ui/index.html");
const SCRIPT: &str = include_str!("../ui/app.js");
const STYLE: &str = include_str!("../ui/style.css");

/// Where the page is.
pub const PATH: &str = "/ui";

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // A new binary may bring new files; the browser asks again.
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
}

/// The page's routes, and `/` sending a browser to it.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { Redirect::to(PATH) }))
        .route(
            PATH,
            get(|| async {
                (
                    [(
                        header::CONTENT_SECURITY_POLICY,
                        "default-src 'self'; frame-ancestors 'none'",
                    )],
                    asset("text/html; charset=utf-8", INDEX),
                )
            }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}
