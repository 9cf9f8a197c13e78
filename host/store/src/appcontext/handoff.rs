//! The hand-off port between the orchestrator, which writes finished
//! contexts, and rsync, which makes clusters match them. It lives next to
//! the context store so that the two are siblings that both depend on it,
//! rather than rsync depending on the orchestrator.

use std::sync::Mutex;

use wasmco_core::ClusterRef;

/// Where finished contexts go: rsync implements it.
pub trait SyncEngine: Send + Sync {
    /// A new context revision is current: make the clusters match it.
    fn deploy(&self, handoff: ContextHandoff);
    /// The DIG was terminated: remove what revision `revision` deployed.
    fn terminate(&self, handoff: ContextHandoff);
    /// The cluster was changed or deleted: forget what was made from its
    /// old kubeconfig.
    fn cluster_changed(&self, _cluster: &ClusterRef) {}
}

/// Which context a [`SyncEngine`] is to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextHandoff {
    /// The DIG's key.
    pub dig: String,
    /// The context revision current when it was handed over (the engine
    /// works towards whatever is current when it gets to it).
    pub revision: u64,
}

/// A sync engine that only records what it was handed, until rsync lands.
#[derive(Debug, Default)]
pub struct NoSync {
    handed: Mutex<Vec<(&'static str, ContextHandoff)>>,
}

impl NoSync {
    /// Everything handed so far.
    pub fn handed(&self) -> Vec<(&'static str, ContextHandoff)> {
        self.handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl SyncEngine for NoSync {
    fn deploy(&self, handoff: ContextHandoff) {
        tracing::info!(dig = %handoff.dig, revision = handoff.revision, "context ready for sync");
        self.handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(("deploy", handoff));
    }

    fn terminate(&self, handoff: ContextHandoff) {
        tracing::info!(dig = %handoff.dig, revision = handoff.revision, "context marked for removal");
        self.handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(("terminate", handoff));
    }
}
