//! What rsync's probe last saw of each cluster, kept apart from any DIG
//! under `health/`.

use wasmco_core::resource::ClusterRef;
use wasmco_core::wire::ClusterHealth;

use super::error::ContextError;
use super::store::{ContextStore, Fence, json};
use crate::kv::BatchOp;

impl ContextStore {
    /// Records what the probe saw of `cluster`.
    pub fn put_health(
        &self,
        cluster: &ClusterRef,
        health: &ClusterHealth,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("health/{cluster}");
        self.commit(
            &key,
            vec![BatchOp::Put(key.clone().into_bytes(), json(health))],
            fence,
            true,
        )
    }

    /// What the probe last saw of `cluster`; `None` before its first probe.
    pub fn health(&self, cluster: &ClusterRef) -> Result<Option<ClusterHealth>, ContextError> {
        self.get_json(&format!("health/{cluster}"))
    }

    /// Every cluster's recorded health, with the cluster it is for, in one
    /// scan.
    pub fn healths(&self) -> Result<Vec<(ClusterRef, ClusterHealth)>, ContextError> {
        let mut healths = Vec::new();
        self.store.visit_prefix(b"health/", &mut |key, value| {
            let cluster = std::str::from_utf8(&key[b"health/".len()..])
                .ok()
                .and_then(ClusterRef::parse);
            match (cluster, serde_json::from_slice(value)) {
                (Some(cluster), Ok(health)) => healths.push((cluster, health)),
                (None, _) => tracing::warn!(
                    key = %String::from_utf8_lossy(key), "cluster health under an unreadable key skipped"
                ),
                (_, Err(error)) => tracing::warn!(
                    key = %String::from_utf8_lossy(key), %error, "unreadable cluster health skipped"
                ),
            }
        })?;
        Ok(healths)
    }

    /// Forgets a deleted cluster's health.
    pub fn forget_health(&self, cluster: &ClusterRef) -> Result<(), ContextError> {
        Ok(self.store.batch(vec![BatchOp::Delete(
            format!("health/{cluster}").into_bytes(),
        )])?)
    }
}
