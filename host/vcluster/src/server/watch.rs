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
use crate::objects::{Event, Selector};

/// A watch: newline-separated `{"type", "object"}` events, starting with the
/// objects that exist unless a resourceVersion other than 0 is given; from
/// one, the changes since it, or (when they are no longer kept, or the
/// watch falls behind) an error that the version is too old, after which
/// a client lists again.
pub(super) fn watch(
    shared: &Arc<Shared>,
    target: &Target,
    selector: Selector,
    params: &Params,
) -> Response {
    // Before the history is read: nothing published between is missed.
    let receiver = shared.subscribe();
    let resource = (target.ty.group.clone(), target.ty.plural.clone());
    let (namespace, within) = (target.namespace.clone(), selector.clone());
    let watched = move |event: &Event| {
        event.resource == resource
            && namespace
                .as_deref()
                .is_none_or(|ns| event.object["metadata"]["namespace"].as_str() == Some(ns))
            && within.matches(&event.object["metadata"]["labels"])
    };
    let from = params
        .resource_version
        .as_deref()
        .filter(|version| !version.is_empty() && *version != "0")
        .map(|version| version.parse::<u64>().unwrap_or(0));
    // The live stream skips what the client saw and what it is sent first:
    // events go out in version order, so everything up to a version.
    let (first, seen_up_to): (Vec<Bytes>, u64) = match from {
        None => {
            let objects = shared.objects();
            // Events are published under this lock: up to this version,
            // each is in the list.
            let listed = objects.list(&target.ty, target.namespace.as_deref(), &selector);
            let lines = listed["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|object| line("ADDED", object))
                .collect();
            (lines, objects.revision())
        }
        Some(from) => {
            let Some((events, latest)) = shared.events_since(from, &watched) else {
                return stream_of(vec![too_old()], futures_util::stream::empty());
            };
            (
                events.iter().map(|e| line(e.kind, &e.object)).collect(),
                latest,
            )
        }
    };
    let timeout = Duration::from_secs(params.timeout_seconds.unwrap_or(1800));
    let deadline = tokio::time::Instant::now() + timeout;
    let watched = Arc::new(watched);
    let live = futures_util::stream::unfold(Some(receiver), move |receiver| {
        let watched = watched.clone();
        async move {
            let mut receiver = receiver?;
            loop {
                let event = match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Err(_) | Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                    // Behind: what it missed, it must list again to see.
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => {
                        return Some((too_old(), None));
                    }
                    Ok(Ok(event)) => event,
                };
                if event.revision > seen_up_to && watched(&event) {
                    return Some((line(event.kind, &event.object), Some(receiver)));
                }
            }
        }
    });
    stream_of(first, live)
}

/// One event of a watch, as a line.
fn line(kind: &str, object: &Value) -> Bytes {
    Bytes::from(format!("{}\n", json!({"type": kind, "object": object})))
}

/// The error a watch gets when it resumes from a resourceVersion whose
/// changes are no longer kept, as a real API server words it.
fn too_old() -> Bytes {
    line(
        "ERROR",
        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "Expired", "code": 410,
                "message": "too old resource version"}),
    )
}

/// The watch's response: `first`, then `live`.
fn stream_of(
    first: Vec<Bytes>,
    live: impl futures_util::Stream<Item = Bytes> + Send + 'static,
) -> Response {
    let first = futures_util::stream::iter(first);
    let stream = futures_util::StreamExt::map(
        futures_util::StreamExt::chain(first, live),
        Ok::<_, Infallible>,
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
