//! A Kubernetes API error, as the API server answers it.

use serde_json::{Value, json};

use crate::catalog::ResourceType;

/// A Kubernetes API error, answered as a `Status` object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KubeError {
    /// HTTP status.
    pub code: u16,
    /// Kubernetes' reason (`NotFound`, `AlreadyExists`, `Invalid`, …).
    pub reason: &'static str,
    /// For a person.
    pub message: String,
}

impl KubeError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        KubeError {
            code,
            reason,
            message: message.into(),
        }
    }

    /// 404 for a missing object.
    pub fn not_found(ty: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(ty)),
        )
    }

    /// 404 for a namespace an object would be in that does not exist.
    pub(crate) fn namespace_not_found(namespace: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("namespaces \"{namespace}\" not found"),
        )
    }

    /// 409 for a create of an object that exists.
    pub(crate) fn already_exists(ty: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(ty)),
        )
    }

    /// 409 for a write whose precondition (`why`) does not hold.
    pub(crate) fn conflict(ty: &ResourceType, name: &str, why: impl std::fmt::Display) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(ty)
            ),
        )
    }

    /// 409 for a server-side apply that would change fields other managers own.
    pub(crate) fn apply_conflicts(conflicts: &[String]) -> Self {
        let count = conflicts.len();
        Self::new(
            409,
            "Conflict",
            format!(
                "Apply failed with {count} conflict{}: {}",
                if count == 1 { "" } else { "s" },
                conflicts.join("; ")
            ),
        )
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422.
    pub fn invalid(ty: &ResourceType, name: &str, message: impl Into<String>) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {}", ty.kind, message.into()),
        )
    }

    /// 415.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/apply-patch+yaml, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json; got {content_type:?}"
            ),
        )
    }

    /// 405.
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource: {method}"),
        )
    }

    /// The `Status` object.
    pub fn status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        })
    }
}

/// `deployments.apps`, as the API server names a type in messages.
fn qualified(ty: &ResourceType) -> String {
    if ty.group.is_empty() {
        ty.plural.clone()
    } else {
        format!("{}.{}", ty.plural, ty.group)
    }
}
