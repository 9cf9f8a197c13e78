//! A request's body, read whole within its kind's limit, and its content
//! type checked.

use axum::extract::Request;
use axum::http::{StatusCode, header};

use wasmco_core::{BodyShape, FileKind, Kind};

use crate::error::ApiError;

/// A request's body, read whole within the kind's limit; nothing of it is
/// parsed yet.
pub(super) struct RawBody {
    /// The multipart boundary, for a kind that takes multipart.
    pub(super) boundary: Option<String>,
    pub(super) bytes: bytes::Bytes,
}

/// Reads the request body the way `kind` carries it: the size and the
/// content type are checked here, the content in [`super::incoming::parse_incoming`].
pub(super) async fn read_body(kind: Kind, request: Request) -> Result<RawBody, ApiError> {
    let info = kind.info();
    if let Some(length) = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && length > info.max_body
    {
        return Err(ApiError::too_large(info.max_body));
    }
    let content_type = content_type(&request);
    let boundary = match info.body {
        BodyShape::Label | BodyShape::Document => {
            expect_json(&content_type)?;
            None
        }
        // EMCO's own controllers are registered by host and port, as JSON.
        BodyShape::Multipart(FileKind::Component)
            if content_type.starts_with("application/json") =>
        {
            None
        }
        BodyShape::Multipart(file_kind) => {
            Some(multer::parse_boundary(&content_type).map_err(|e| {
                let file = match file_kind {
                    FileKind::Component => "the WebAssembly component (.wasm): controllers are components, not services",
                    FileKind::Manifests => "the app: a Helm chart .tgz, a .tgz of manifests or a multi-document YAML",
                    FileKind::Profile => "the profile: EMCO's .tgz or a YAML map",
                    FileKind::Kubeconfig => "the cluster's kubeconfig",
                    FileKind::DeployFile => "Eggo's deploy file (and the `privateKey` part, if it logs in with a key)",
                    FileKind::MachineLogin => "the login: a kubernetes.io/basic-auth or kubernetes.io/ssh-auth Secret",
                };
                let got = if content_type.starts_with("multipart/") {
                    format!("the multipart body is unreadable ({e})")
                } else if content_type.is_empty() {
                    "the request has no Content-Type".to_owned()
                } else {
                    format!("got {content_type}")
                };
                ApiError::field(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Content-Type",
                    format!(
                        "this is uploaded as multipart/form-data, with a `metadata` part (the JSON \
                         document) and a `file` part ({file}); {got}"
                    ),
                )
            })?)
        }
    };
    let bytes = axum::body::to_bytes(request.into_body(), info.max_body)
        .await
        .map_err(|_| ApiError::too_large(info.max_body))?;
    Ok(RawBody { boundary, bytes })
}

/// The request's `Content-Type`, empty when it has none.
pub(crate) fn content_type(request: &Request) -> String {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

pub(crate) fn expect_json(content_type: &str) -> Result<(), ApiError> {
    if content_type.starts_with("application/json") {
        return Ok(());
    }
    Err(ApiError::field(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "Content-Type",
        format!(
            "expected application/json, got {:?}",
            if content_type.is_empty() {
                "nothing"
            } else {
                content_type
            }
        ),
    ))
}
