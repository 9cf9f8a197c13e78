//! `GET …/{dig}/rollout` and `POST …/{dig}/rollout/{pause|resume|abort}`.

use axum::extract::{Path, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use wasmco_core::wire::RolloutStatus;
use wasmco_orchestrator::{DigRef, RolloutAction};

use super::dig::{DigPath, state_body};
use crate::error::ApiError;
use crate::state::AppState;

/// What `…/rollout/{action}` may name, and the action each is.
pub const ROLLOUT_ACTIONS: [(&str, RolloutAction); 3] = [
    ("pause", RolloutAction::Pause),
    ("resume", RolloutAction::Resume),
    ("abort", RolloutAction::Abort),
];

/// `GET …/{dig}/rollout`: the current revision's rollout and its groups.
pub async fn rollout(
    state: AppState,
    path: Path<DigPath>,
) -> Result<axum::Json<RolloutStatus>, ApiError> {
    let dig: DigRef = path.0.into();
    let orchestrator = state.orchestrator.clone();
    let (rollout, groups) =
        crate::work::off_the_workers(move || orchestrator.rollout(&dig)).await??;
    Ok(axum::Json(RolloutStatus {
        rollout,
        groups: groups
            .into_iter()
            .map(|group| group.iter().map(ToString::to_string).collect())
            .collect(),
    }))
}

/// `POST …/{dig}/rollout/{action}`: 202 with the DIG's state.
pub async fn act_on_rollout(
    state: AppState,
    action: RolloutAction,
    path: Path<DigPath>,
    request: Request,
) -> Result<Response, ApiError> {
    let dig: DigRef = path.0.into();
    let actor = crate::auth::actor(&request);
    let orchestrator = state.orchestrator.clone();
    let target = dig.clone();
    let new_state =
        crate::work::off_the_workers(move || orchestrator.act_on_rollout(&target, action, actor))
            .await??;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(state_body(&dig, &new_state)),
    )
        .into_response())
}
