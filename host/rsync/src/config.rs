//! How rsync paces itself, and the backoff every retry of it follows.

use std::sync::Arc;
use std::time::Duration;

use backon::BackoffBuilder;

use wasmco_pki::kubeconfig::KubeconfigPolicy;

/// How rsync paces itself.
#[derive(Debug, Clone)]
pub struct RsyncConfig {
    /// Clusters synced at once, across every target.
    pub parallel_clusters: usize,
    /// Applies in flight at once on one cluster (within one kind rank:
    /// CRDs, namespaces and the rest still go in that order).
    pub parallel_applies: usize,
    /// How long a resource may take to become ready before it is reported not ready.
    pub ready_timeout: Duration,
    /// First and largest delay between attempts: a request to a cluster
    /// that does not answer, a reconcile that did not finish, a probe of an
    /// unreachable cluster.
    pub backoff: (Duration, Duration),
    /// Attempts at an unreachable cluster within one reconcile before its
    /// resources are marked Failed (the worker tries again later).
    pub attempts: u32,
    /// How often a settled target is reconciled again, which finds and
    /// repairs drift (plus up to a tenth of it as jitter).
    pub resync: Duration,
    /// How often a reachable cluster is probed.
    pub probe_interval: Duration,
    /// Write each cluster's manifests under this directory instead of
    /// applying them (dry runs, GitOps).
    pub directory: Option<std::path::PathBuf>,
    /// What a cluster's kubeconfig may ask of this host.
    pub kubeconfigs: Arc<KubeconfigPolicy>,
    /// How long connecting to a cluster may take.
    pub connect_timeout: Duration,
    /// How long one request to a cluster may take to be sent and answered.
    /// kube-rs waits for ever by default, so a frozen cluster would hold
    /// its work, and every app waiting on it, without a word; past this it
    /// is Retrying, as a cluster that refuses connections is.
    pub request_timeout: Duration,
}

impl Default for RsyncConfig {
    fn default() -> Self {
        RsyncConfig {
            parallel_clusters: 16,
            parallel_applies: 8,
            ready_timeout: Duration::from_secs(60),
            backoff: (Duration::from_millis(100), Duration::from_secs(5)),
            attempts: 30,
            resync: Duration::from_secs(300),
            probe_interval: Duration::from_secs(10),
            directory: None,
            kubeconfigs: Arc::default(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
        }
    }
}

impl RsyncConfig {
    /// Backoff with jitter between `backoff`'s bounds, never ending.
    pub(crate) fn retries(&self) -> backon::ExponentialBackoff {
        let (first, ceiling) = self.backoff;
        backon::ExponentialBuilder::new()
            .with_min_delay(first)
            .with_max_delay(ceiling)
            .with_jitter()
            .without_max_times()
            .build()
    }
}
