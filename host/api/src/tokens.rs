//! `/v2/tokens`: scoped tokens, issued, listed and revoked by the admin.
//! A token's secret is answered once, when it is issued; only its hash is
//! kept.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use wasmco_core::Metadata;
use wasmco_core::tokens::{
    TokenRecord, TokenRequest, TokenRequestSpec, TokenShown, TokenStatus, parse_expiry,
};
use wasmco_store::db::TokenError;

use super::auth::{digest, now};
use super::error::ApiError;
use super::state::AppState;

/// How a token is shown: its scope, never its secret or hash.
fn shown(record: &TokenRecord) -> TokenShown {
    let at = |secs: u64| {
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
        )
        .to_string()
    };
    TokenShown {
        metadata: Metadata {
            name: record.name.clone(),
            description: None,
            user_data1: None,
            user_data2: None,
        },
        spec: TokenRequestSpec {
            projects: record.projects.clone(),
            role: record.role,
            expires: at(record.expires),
        },
        status: TokenStatus {
            issued: at(record.issued),
            expired: record.expired(now()),
            token: None,
        },
    }
}

/// `POST /v2/tokens`.
pub async fn issue(state: AppState, body: bytes::Bytes) -> Result<Response, ApiError> {
    let request: TokenRequest = wasmco_core::parse_json(&body, "body")?;
    wasmco_core::check_name("metadata.name", &request.metadata.name)?;
    for project in &request.spec.projects {
        wasmco_core::check_name("spec.projects", project)?;
    }
    if request.spec.projects.is_empty() {
        return Err(ApiError::field(
            StatusCode::BAD_REQUEST,
            "spec.projects",
            "a scoped token names at least one project",
        ));
    }
    let issued = now();
    let secret = format!("wasmco_{}", wasmco_store::secrets::random_hex(32));
    let record = TokenRecord {
        name: request.metadata.name,
        projects: request.spec.projects,
        role: request.spec.role,
        issued,
        expires: parse_expiry(&request.spec.expires, issued)?,
        digest: digest(&secret),
    };
    let db = state.db.clone();
    let stored = record.clone();
    crate::work::off_the_workers(move || db.create_token(&stored))
        .await?
        .map_err(|e| match e {
            TokenError::Exists(_) => {
                ApiError::field(StatusCode::CONFLICT, "metadata.name", e.to_string())
            }
            other => ApiError::internal(other),
        })?;
    state.tokens.insert(record.clone());
    let mut body = shown(&record);
    body.status.token = Some(secret);
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// `GET /v2/tokens`.
pub async fn list(state: AppState) -> Result<Response, ApiError> {
    let records = state.db.tokens()?;
    Ok(axum::Json(records.iter().map(shown).collect::<Vec<_>>()).into_response())
}

/// `GET /v2/tokens/{token}`.
pub async fn get_one(state: AppState, Path(name): Path<String>) -> Result<Response, ApiError> {
    state
        .db
        .tokens()?
        .iter()
        .find(|r| r.name == name)
        .map(|r| axum::Json(shown(r)).into_response())
        .ok_or_else(|| missing(&name))
}

/// `DELETE /v2/tokens/{token}`: the token stops working at once.
pub async fn revoke(state: AppState, Path(name): Path<String>) -> Result<Response, ApiError> {
    let db = state.db.clone();
    let target = name.clone();
    let deleted = crate::work::off_the_workers(move || db.delete_token(&target)).await??;
    if !deleted {
        return Err(missing(&name));
    }
    state.tokens.revoke(&name);
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn missing(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("token {name} not found"))
}
