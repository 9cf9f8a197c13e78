//! Where a cluster's authorities are kept: sealed, as a secret of the
//! cluster's resource. The PKI makes and reads certificates; keeping them is
//! the caller's, so the PKI knows no store.

use wasmco_pki::ClusterPki;
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

/// The name of a cluster's sealed PKI secret.
const PKI_SECRET: &str = "pki";

/// The stored authorities of `cluster`, if it has a CA.
pub fn load(db: &ResourceDb, cluster: &ResourceId) -> Result<Option<ClusterPki>, DbError> {
    let Some(bytes) = db.secret(cluster, PKI_SECRET)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| DbError::Corrupt {
            id: cluster.clone(),
            reason: format!("its PKI: {e}"),
        })
}

/// Stores (seals) `pki` as `cluster`'s authorities.
pub fn save(db: &ResourceDb, cluster: &ResourceId, pki: &ClusterPki) -> Result<(), DbError> {
    // Serialising plain strings cannot fail.
    let bytes = serde_json::to_vec(pki).unwrap_or_default();
    db.put_secret(cluster, PKI_SECRET, &bytes)
}
