//! The hand-off port between the orchestrator, which writes finished
//! contexts and states, and rsync, which makes clusters match them. It
//! lives next to the context store so that the two are siblings that both
//! depend on it, rather than rsync depending on the orchestrator.

use wasmco_core::ClusterRef;

/// Where state changes go: rsync implements it.
pub trait SyncEngine: Send + Sync {
    /// The stored state of `key` (a DIG's or a logical cloud's) changed:
    /// a new revision, a terminate, a stop. The engine reads what is stored
    /// and makes the clusters match it.
    fn changed(&self, key: &str);
    /// The cluster was changed or deleted: forget what was made from its
    /// old kubeconfig.
    fn cluster_changed(&self, _cluster: &ClusterRef) {}
    /// Each target being synced and the id of the host that syncs it.
    fn work(&self) -> std::collections::BTreeMap<String, String> {
        std::collections::BTreeMap::new()
    }
}

/// A sync engine that deploys nothing, for tools that only build contexts.
#[derive(Debug, Default)]
pub struct NoSync;

impl SyncEngine for NoSync {
    fn changed(&self, key: &str) {
        tracing::info!(target = key, "state changed; nothing syncs it");
    }
}
