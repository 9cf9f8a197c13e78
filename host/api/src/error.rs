//! Every API error is a JSON body: `{"message": "...", "field": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use wasmco_core::FieldError;
use wasmco_core::wire::ErrorBody;
use wasmco_orchestrator::OrchestratorError;
use wasmco_store::StoreError;
use wasmco_store::db::DbError;

/// An error the API answers with.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
    /// The request field at fault, if one is.
    pub field: Option<String>,
}

impl ApiError {
    /// The answer for a path no route serves: the router's fallback, and
    /// a declared intent group's path that names no declared kind.
    pub(crate) fn no_route(method: &axum::http::Method, path: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no route for {method} {path}"),
        )
    }

    /// An error without a field.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: wasmco_core::limits::bounded(message.into()),
            field: None,
        }
    }

    /// A 400 (or other status) naming a field.
    pub fn field(status: StatusCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        let cut = wasmco_core::limits::bounded;
        ApiError {
            status,
            message: cut(message.into()),
            field: Some(cut(field.into())),
        }
    }

    /// 413 for a body over `limit` bytes.
    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body is larger than the {} MiB this resource accepts",
                limit >> 20
            ),
        )
    }

    /// 503 while the store cannot be reached: the request may be tried
    /// again as it is.
    pub fn unavailable(message: impl Into<String>) -> Self {
        let message = message.into();
        tracing::warn!(%message, "store unavailable");
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// 503 while the host is busy (every render slot taken): the request
    /// may be tried again as it is.
    pub fn busy(message: impl Into<String>) -> Self {
        let message = message.into();
        tracing::info!(%message, "busy");
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// 500 for a failure that is ours, not the client's.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        let error = wasmco_core::limits::bounded(error.to_string());
        tracing::error!(%error, "request failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {error}"),
        )
    }
}

/// A query string the handler's parameters refuse, as a 400 naming why.
pub(crate) fn bad_query(rejection: axum::extract::rejection::QueryRejection) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        format!("bad query: {}", rejection.body_text()),
    )
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        let message = format!("{}: {}", e.field, e.reason);
        ApiError::field(StatusCode::BAD_REQUEST, e.field, message)
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        let message = e.to_string();
        match e {
            DbError::NotFound(_) | DbError::ParentNotFound(_) => {
                ApiError::new(StatusCode::NOT_FOUND, message)
            }
            DbError::AlreadyExists(_) => {
                ApiError::field(StatusCode::CONFLICT, "metadata.name", message)
            }
            DbError::InUse { .. } | DbError::HasChildren { .. } => {
                ApiError::new(StatusCode::CONFLICT, message)
            }
            DbError::ReferenceNotFound { field, .. } => {
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, field, message)
            }
            DbError::Store(StoreError::Unavailable { .. }) | DbError::Busy => {
                ApiError::unavailable(message)
            }
            DbError::Store(StoreError::TooLarge { .. }) => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message)
            }
            DbError::Corrupt { .. } | DbError::Store(_) | DbError::Sealed(_) => {
                ApiError::internal(message)
            }
        }
    }
}

impl From<OrchestratorError> for ApiError {
    fn from(e: OrchestratorError) -> Self {
        match e {
            OrchestratorError::Db(db) => db.into(),
            OrchestratorError::State { .. }
            | OrchestratorError::Deployed(_)
            | OrchestratorError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            OrchestratorError::Field(field) => {
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, field.field, field.reason)
            }
            OrchestratorError::Input(_)
            | OrchestratorError::ClusterDeploy(_)
            | OrchestratorError::Controller(_)
            | OrchestratorError::Tenancy(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
            }
            OrchestratorError::Busy(_) => ApiError::busy(e.to_string()),
            OrchestratorError::Context(wasmco_store::appcontext::ContextError::NoRevision(_)) => {
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "revision", e.to_string())
            }
            OrchestratorError::Context(
                wasmco_store::appcontext::ContextError::Store(
                    wasmco_store::StoreError::Unavailable { .. },
                )
                | wasmco_store::appcontext::ContextError::Fenced(_),
            ) => ApiError::unavailable(e.to_string()),
            OrchestratorError::Context(_) => ApiError::internal(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            message: self.message,
            field: self.field,
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            // Worth trying again soon: the store is coming back, or busy.
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}
