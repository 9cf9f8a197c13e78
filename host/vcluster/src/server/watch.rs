//! Watches: the objects that exist, then every change to them, as a
//! stream of lines.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::request::{Params, Target};
use super::shared::Shared;
use crate::objects::Selector;

/// A watch: newline-separated `{"type", "object"}` events, starting with the
/// objects that exist unless a resourceVersion other than 0 is given.
pub(super) fn watch(
    shared: &Arc<Shared>,
    target: &Target,
    selector: Selector,
    params: &Params,
) -> Response {
    let receiver = shared.subscribe();
    let initial: Vec<Value> = match params.resource_version.as_deref() {
        None | Some("") | Some("0") => {
            shared
                .objects()
                .list(&target.ty, target.namespace.as_deref(), &selector)["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
        Some(_) => Vec::new(),
    };
    let resource = (target.ty.group.clone(), target.ty.plural.clone());
    let namespace = target.namespace.clone();
    let timeout = Duration::from_secs(params.timeout_seconds.unwrap_or(1800));
    let deadline = tokio::time::Instant::now() + timeout;
    let line = |kind: &str, object: &Value| {
        Bytes::from(format!("{}\n", json!({"type": kind, "object": object})))
    };
    let first: Vec<Result<Bytes, Infallible>> =
        initial.iter().map(|o| Ok(line("ADDED", o))).collect();
    let live = futures_util::stream::unfold(receiver, move |mut receiver| {
        let resource = resource.clone();
        let namespace = namespace.clone();
        let selector = selector.clone();
        async move {
            loop {
                let event = match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Err(_) | Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
                    Ok(Ok(event)) => event,
                };
                let in_namespace = namespace
                    .as_deref()
                    .is_none_or(|ns| event.object["metadata"]["namespace"].as_str() == Some(ns));
                if event.resource == resource
                    && in_namespace
                    && selector.matches(&event.object["metadata"]["labels"])
                {
                    let bytes = Bytes::from(format!(
                        "{}\n",
                        json!({"type": event.kind, "object": event.object})
                    ));
                    return Some((Ok::<_, Infallible>(bytes), receiver));
                }
            }
        }
    });
    let stream = futures_util::StreamExt::chain(futures_util::stream::iter(first), live);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
