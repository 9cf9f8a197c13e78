//! `GET /v2/gitops`: where the cluster repository's deploy files are.

use axum::http::StatusCode;

use wasmco_core::wire::GitOpsStatus;

use crate::{ApiError, AppState};

/// The status the GitOps follower last kept (any host serves it); 404 when
/// no host of this store follows a repository.
pub async fn status(state: AppState) -> Result<axum::Json<GitOpsStatus>, ApiError> {
    let db = state.db.clone();
    let kept =
        crate::work::off_the_workers(move || wasmco_orchestrator::gitops::status(&db)).await??;
    kept.map(axum::Json).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no host of this store follows a cluster repository (start one with `wasmco serve \
             --cluster-repo URL[#branch]`)",
        )
    })
}
