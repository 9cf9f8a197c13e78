//! Answers as the API server writes them: JSON bodies, and failures as
//! `Status` objects.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::objects::KubeError;

pub(super) fn json_response(code: StatusCode, body: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn failure(error: &KubeError) -> Response {
    json_response(
        StatusCode::from_u16(error.code).unwrap_or(StatusCode::BAD_REQUEST),
        &error.status(),
    )
}

/// The answer of an injected fault: 429 asks to retry after a second.
pub(super) fn injected_failure(code: u16) -> Response {
    let (reason, message) = match code {
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        _ => (
            "InternalError",
            "an error on the server (injected by the virtual cluster) has prevented the request from succeeding",
        ),
    };
    let status = KubeError {
        code,
        reason,
        message: message.into(),
    };
    let mut response = failure(&status);
    if code == 429 {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}
