//! Reading a request: its object path, its query and its body, as the API
//! server reads them.

use axum::http::{HeaderMap, header};
use serde_json::Value;

use super::shared::Shared;
use crate::catalog::ResourceType;
use crate::objects::{KubeError, PatchKind};

/// Query parameters the API server understands (the rest are ignored, as it does).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Params {
    pub label_selector: Option<String>,
    pub watch: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub field_manager: Option<String>,
    pub force: Option<bool>,
    pub resource_version: Option<String>,
}

impl Params {
    /// Whether the request asks to watch (`watch=true` or `watch=1`).
    pub fn watches(&self) -> bool {
        matches!(self.watch.as_deref(), Some("true" | "1"))
    }
}

/// Who writes: the `fieldManager` given, else (as the API server does) the
/// client's user agent up to its first `/`.
pub(super) fn manager(params: &Params, headers: &HeaderMap) -> String {
    if let Some(manager) = params.field_manager.as_deref().filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    headers
        .get(header::USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
        .and_then(|agent| agent.split('/').next())
        .filter(|agent| !agent.is_empty())
        .unwrap_or("unknown")
        .to_owned()
}

/// A parsed object path.
pub(super) struct Target {
    pub ty: ResourceType,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Subresource,
}

/// The part of an object a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Subresource {
    /// The whole object.
    None,
    /// `…/status`.
    Status,
    /// `…/approval`, of a CertificateSigningRequest.
    Approval,
}

/// The object path `segments` name, of a type the cluster serves.
pub(super) fn target(shared: &Shared, segments: &[&str]) -> Result<Target, KubeError> {
    let not_found = || KubeError {
        code: 404,
        reason: "NotFound",
        message: "the server could not find the requested resource".into(),
    };
    let (group, version, rest) = match segments {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found()),
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => {
            (Some((*namespace).to_owned()), rest)
        }
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, Subresource::None),
        [plural, name] => (*plural, Some((*name).to_owned()), Subresource::None),
        [plural, name, "status"] => (*plural, Some((*name).to_owned()), Subresource::Status),
        ["certificatesigningrequests", name, "approval"] if group == "certificates.k8s.io" => (
            "certificatesigningrequests",
            Some((*name).to_owned()),
            Subresource::Approval,
        ),
        _ => return Err(not_found()),
    };
    let ty = shared
        .objects()
        .find(group, version, plural)
        .cloned()
        .ok_or_else(not_found)?;
    if namespace.is_some() && !ty.namespaced {
        return Err(not_found());
    }
    Ok(Target {
        ty,
        namespace,
        name,
        subresource,
    })
}

/// The body as its content type says, and the kind of patch that type names.
pub(super) fn parse_body(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Value, Option<PatchKind>), KubeError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or_default().trim();
    let patch = match media {
        "application/apply-patch+yaml" => Some(PatchKind::Apply),
        "application/merge-patch+json" => Some(PatchKind::Merge),
        "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
        "application/json-patch+json" => Some(PatchKind::Json),
        "application/json" | "application/yaml" | "*/*" | "" => None,
        other => return Err(KubeError::unsupported_media_type(other)),
    };
    let text =
        std::str::from_utf8(body).map_err(|_| KubeError::bad_request("the body is not UTF-8"))?;
    let value = if media.ends_with("yaml") {
        serde_norway::from_str(text)
            .map_err(|e| KubeError::bad_request(format!("the body is not YAML: {e}")))?
    } else {
        serde_json::from_str(text)
            .map_err(|e| KubeError::bad_request(format!("the body is not JSON: {e}")))?
    };
    Ok((value, patch))
}
