//! The follower's status, kept in the store as a host secret so that every
//! host of the store serves it.

use wasmco_core::wire::GitOpsStatus;
use wasmco_store::db::{DbError, ResourceDb};

/// The host secret the status is kept under, so every host serves it.
const STATUS: &str = "gitops-status";

/// The status last kept, if GitOps ever ran against this store.
pub fn status(db: &ResourceDb) -> Result<Option<GitOpsStatus>, DbError> {
    Ok(db
        .host_secret(STATUS)?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

pub(super) fn keep(db: &ResourceDb, status: &GitOpsStatus) -> Result<(), DbError> {
    // Plain data always serialises.
    db.put_host_secret(STATUS, &serde_json::to_vec(status).unwrap_or_default())
}
