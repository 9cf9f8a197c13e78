//! What every reconcile of this host shares: the stores, the clients, the
//! watches it starts, the metrics it counts, the pace it keeps.

use std::sync::Arc;

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

use wasmco_store::appcontext::ContextStore;
use wasmco_store::hosts::HostGroup;

use crate::clients::Clients;
use crate::config::RsyncConfig;
use crate::health::Health;
use crate::metrics::RsyncMetrics;
use crate::watch::Watches;

/// The context a reconcile runs in.
pub(crate) struct Reconciler {
    pub(crate) contexts: ContextStore,
    pub(crate) clients: Arc<Clients>,
    /// Told when a request reaches a cluster recorded as away.
    pub(crate) health: Arc<Health>,
    /// Started for each kind applied.
    pub(crate) watches: Arc<Watches>,
    /// Whose ownership of a target every write about it is fenced by.
    pub(crate) group: Arc<dyn HostGroup>,
    pub(crate) metrics: RsyncMetrics,
    pub(crate) config: Arc<RsyncConfig>,
    /// The `parallel_clusters` slots, across every target.
    parallel: Arc<Semaphore>,
}

impl Reconciler {
    pub(crate) fn new(
        contexts: ContextStore,
        clients: Arc<Clients>,
        health: Arc<Health>,
        watches: Arc<Watches>,
        group: Arc<dyn HostGroup>,
        metrics: RsyncMetrics,
        config: Arc<RsyncConfig>,
    ) -> Self {
        Reconciler {
            parallel: Arc::new(Semaphore::new(config.parallel_clusters.max(1))),
            contexts,
            clients,
            health,
            watches,
            group,
            metrics,
            config,
        }
    }

    /// One of the `parallel_clusters` slots a cluster job holds while it
    /// works, counted in the queue depth while it waits.
    pub(crate) async fn cluster_slot(&self) -> Result<OwnedSemaphorePermit, AcquireError> {
        let _waiting = self.metrics.waiting();
        self.parallel.clone().acquire_owned().await
    }
}
