//! `POST …/{dig}/{action}`: approve, instantiate, update, rollback,
//! migrate, terminate and stop.

use axum::extract::{Path, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use wasmco_core::wire::DigAction;
use wasmco_orchestrator::DigRef;

use super::dig::{DigPath, state_body};
use crate::error::ApiError;
use crate::state::AppState;

/// The revision a `rollback` body names: EMCO's `{"metadata": {…},
/// "spec": {"revision": "1"}}` (a string there), or `{"revision": 1}`.
fn rollback_revision(bytes: &[u8]) -> Result<u64, ApiError> {
    let body: serde_json::Map<String, Value> = wasmco_core::parse_json(bytes, "body")?;
    let (field, value) = match body.get("spec") {
        Some(spec) => ("spec.revision", spec.get("revision")),
        None => ("revision", body.get("revision")),
    };
    let value = value.ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            field,
            "missing: the revision to roll back to",
        )
    })?;
    let revision = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    };
    revision.filter(|r| *r > 0).ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            field,
            format!("must be a revision number (1 or more), not {value}"),
        )
    })
}

/// Where a `migrate` body sends the DIG: EMCO's `{"spec":
/// {"targetCompositeAppVersion", "targetDeploymentIntentGroup"}}` (older
/// EMCO spelled them `target-composite-app-version`, `target-dig-name`),
/// or that spec alone.
fn migrate_target(bytes: &[u8]) -> Result<(String, String), ApiError> {
    let body: serde_json::Map<String, Value> = wasmco_core::parse_json(bytes, "body")?;
    // emcoctl posts the document's spec alone.
    let spec = match body.get("spec") {
        Some(Value::Object(spec)) => spec,
        Some(_) => {
            return Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                "spec",
                "must be {targetCompositeAppVersion, targetDeploymentIntentGroup}",
            ));
        }
        None => &body,
    };
    let text = |names: [&str; 2]| {
        let found = names.iter().find_map(|n| spec.get(*n));
        match found {
            Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
            _ => Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                format!("spec.{}", names[0]),
                "missing or not a name",
            )),
        }
    };
    Ok((
        text(["targetCompositeAppVersion", "target-composite-app-version"])?,
        text(["targetDeploymentIntentGroup", "target-dig-name"])?,
    ))
}

/// `POST …/{dig}/{action}`.
pub async fn act(
    state: AppState,
    action: DigAction,
    path: Path<DigPath>,
    request: Request,
) -> Result<Response, ApiError> {
    let dig: DigRef = path.0.into();
    let actor = crate::auth::actor(&request);
    let (revision, migrate_to) = match action {
        DigAction::Rollback | DigAction::Migrate => {
            let bytes = axum::body::to_bytes(request.into_body(), 1 << 16)
                .await
                .map_err(|_| ApiError::too_large(1 << 16))?;
            if action == DigAction::Rollback {
                (Some(rollback_revision(&bytes)?), None)
            } else {
                (None, Some(migrate_target(&bytes)?))
            }
        }
        _ => (None, None),
    };
    // A migrate answers with the DIG it moved to.
    let answered = match &migrate_to {
        Some((version, name)) => DigRef {
            version: version.clone(),
            name: name.clone(),
            ..dig.clone()
        },
        None => dig.clone(),
    };
    let orchestrator = state.orchestrator.clone();
    let target = dig.clone();
    let new_state = crate::work::off_the_workers(move || match action {
        DigAction::Approve => orchestrator.approve(&target),
        DigAction::Instantiate => orchestrator.instantiate(&target, actor),
        DigAction::Update => orchestrator.update(&target, actor),
        DigAction::Rollback => orchestrator.rollback(&target, revision.unwrap_or_default(), actor),
        DigAction::Terminate => orchestrator.terminate(&target),
        DigAction::Stop => orchestrator.stop(&target),
        DigAction::Migrate => {
            let (version, name) = migrate_to.unwrap_or_default();
            orchestrator.migrate(&target, &version, &name, actor)
        }
    })
    .await??;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(state_body(&answered, &new_state)),
    )
        .into_response())
}
