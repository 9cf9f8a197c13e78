//! The hand-off port between the orchestrator, which writes finished
//! contexts and states, and rsync, which makes clusters match them. It
//! lives next to the context store so that the two are siblings that both
//! depend on it, rather than rsync depending on the orchestrator.

use std::sync::Weak;

use wasmco_core::ClusterRef;

use super::model::StoredContext;

/// Where state changes go: rsync implements it. It holds the clusters'
/// clients, so it is also what reads facts from them.
pub trait SyncEngine: ClusterFacts {
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
    /// Tells `listener` of every reconcile of a deployed target that ends
    /// (not one that a newer state stopped), for as long as it lives.
    fn listen(&self, _listener: Weak<dyn ReconcileListener>) {}
}

/// What hears that a target's clusters were made to match its context,
/// as subscribers to EMCO's rsync ready notifications do: each time, not
/// once, since what the clusters say may have changed. Called on the sync
/// engine's workers, so it must return at once.
pub trait ReconcileListener: Send + Sync {
    /// A reconcile of `key`, deploying `context`, ended.
    fn reconciled(&self, key: &str, context: &StoredContext);
}

/// A sync engine that deploys nothing, for tools that only build contexts.
#[derive(Debug, Default)]
pub struct NoSync;

impl SyncEngine for NoSync {
    fn changed(&self, key: &str) {
        tracing::info!(target = key, "state changed; nothing syncs it");
    }
}

/// It reaches no cluster: every fact is unknown.
impl ClusterFacts for NoSync {}

/// Facts about clusters that only the clusters know, for controllers
/// that declare they need them: read by the sync engine, which holds the
/// clusters' clients.
pub trait ClusterFacts: Send + Sync {
    /// The cluster's nodes: `[{name, labels, available: {resource: amount}}]`,
    /// available being allocatable minus what the pods on it request.
    fn nodes(&self, _cluster: &ClusterRef) -> Result<serde_json::Value, String> {
        Err("this host reads nothing from clusters".to_owned())
    }

    /// [`Self::nodes`] of each of `clusters`, in their order; an engine
    /// that can ask several clusters at once does.
    fn nodes_of(&self, clusters: &[ClusterRef]) -> Vec<Result<serde_json::Value, String>> {
        clusters.iter().map(|cluster| self.nodes(cluster)).collect()
    }

    /// The IP addresses of the cluster's nodes: each node's in the order
    /// its status lists them, the nodes in the order the API lists them.
    fn node_addresses(&self, _cluster: &ClusterRef) -> Result<Vec<String>, String> {
        Err("this host reads nothing from clusters".to_owned())
    }

    /// The object `manifest` names (its apiVersion, kind, name and
    /// namespace) as the cluster has it now; `None` when it has none.
    fn object(
        &self,
        _cluster: &ClusterRef,
        _manifest: &serde_json::Value,
    ) -> Result<Option<serde_json::Value>, String> {
        Err("this host reads nothing from clusters".to_owned())
    }
}
