//! The engine: its shared state (workers, probes, watches, clients,
//! ownership), the hand-off port the orchestrator calls, and start-up.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Semaphore;

use wasmco_core::{ClusterRef, Kind};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::appcontext::{
    Access, ContextMeta, ContextStore, DeployState, ReconcileListener, StoredContext, SyncEngine,
};
use wasmco_store::db::{ResourceDb, ResourceId};
use wasmco_store::hosts::HostGroup;

use crate::target::{DirectoryTarget, KubeTarget, SyncError, SyncTarget};
use crate::{health, metrics, ownership, watch, worker};

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

/// The sync engine; cheap to clone.
#[derive(Clone)]
pub struct Rsync {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) db: ResourceDb,
    pub(crate) contexts: ContextStore,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) targets: Mutex<HashMap<Reach, Arc<dyn SyncTarget>>>,
    pub(crate) parallel: Arc<Semaphore>,
    pub(crate) workers: worker::Workers,
    pub(crate) probes: health::Probes,
    pub(crate) watches: watch::Watches,
    pub(crate) ownership: ownership::Ownership,
    pub(crate) metrics: metrics::RsyncMetrics,
    pub(crate) config: RsyncConfig,
    /// Who hears of each finished reconcile of a deployed target.
    pub(crate) listeners: Mutex<Vec<Weak<dyn ReconcileListener>>>,
}

impl Inner {
    /// One of the `parallel_clusters` slots a cluster job holds while it
    /// works, counted in the queue depth while it waits.
    pub(crate) async fn cluster_slot(
        &self,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, tokio::sync::AcquireError> {
        let _waiting = self.metrics.waiting();
        self.parallel.clone().acquire_owned().await
    }
}

impl Rsync {
    /// An engine running its work on `runtime`, sharing it with the other
    /// hosts of `hosts`.
    pub fn new(
        db: ResourceDb,
        contexts: ContextStore,
        runtime: tokio::runtime::Handle,
        config: RsyncConfig,
        hosts: Arc<dyn HostGroup>,
    ) -> Self {
        let parallel = Arc::new(Semaphore::new(config.parallel_clusters.max(1)));
        Rsync {
            inner: Arc::new(Inner {
                db,
                contexts,
                runtime,
                targets: Mutex::default(),
                parallel,
                workers: worker::Workers::default(),
                probes: health::Probes::default(),
                watches: watch::Watches::default(),
                ownership: ownership::Ownership::new(hosts),
                metrics: metrics::RsyncMetrics::default(),
                config,
                listeners: Mutex::default(),
            }),
        }
    }

    /// What rsync did, for `/metrics`.
    pub fn metrics(&self) -> &metrics::RsyncMetrics {
        &self.inner.metrics
    }

    /// Takes up, after a restart, every target with a context and starts
    /// probing every cluster. A reconcile finds on the clusters what the
    /// crash left half done, so finished work is confirmed, unfinished work
    /// completed and leftovers removed, with no duplicate objects.
    ///
    /// With other hosts on the store, it takes up the targets that fall to
    /// this host, now and as hosts come and go.
    pub fn resume(&self) -> Result<usize, RsyncError> {
        if self.inner.ownership.group.shared() {
            // Probes are shared out with the targets.
            ownership::start(&self.inner)?;
            return Ok(0);
        }
        for cluster in self.inner.all_clusters()? {
            self.inner.probe(cluster);
        }
        let mut resumed = 0;
        for (key, state) in self.inner.contexts.states()? {
            if state.revision == 0
                || !matches!(
                    state.state,
                    DeployState::Instantiated | DeployState::Updated | DeployState::Terminated
                )
            {
                continue;
            }
            self.inner.nudge(&key);
            resumed += 1;
        }
        Ok(resumed)
    }
}

impl Inner {
    /// Every cluster of every provider.
    pub(crate) fn all_clusters(&self) -> Result<Vec<ClusterRef>, RsyncError> {
        let mut clusters = Vec::new();
        for (provider, _) in self.db.list(Kind::ClusterProvider, &[])? {
            for (cluster, _) in self.db.list(Kind::Cluster, &provider.path)? {
                if let [provider, cluster] = cluster.path.as_slice() {
                    clusters.push(ClusterRef::new(provider, cluster));
                }
            }
        }
        Ok(clusters)
    }
}

impl SyncEngine for Rsync {
    fn changed(&self, key: &str) {
        if self.inner.ownership.group.shared() {
            self.inner.target_changed(key);
        } else {
            self.inner.nudge(key);
        }
    }

    fn cluster_changed(&self, cluster: &ClusterRef) {
        if self.inner.ownership.group.shared() {
            self.inner.shared_cluster_changed(cluster);
        } else {
            self.inner.local_cluster_changed(cluster);
        }
    }

    fn work(&self) -> BTreeMap<String, String> {
        self.inner.work().unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot read who works on what");
            BTreeMap::new()
        })
    }

    fn listen(&self, listener: Weak<dyn ReconcileListener>) {
        let mut listeners = self
            .inner
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        listeners.retain(|l| l.strong_count() > 0);
        listeners.push(listener);
    }
}

impl Inner {
    /// Tells the listeners that a reconcile deploying `context` ended.
    pub(crate) fn reconciled(&self, key: &str, context: &StoredContext) {
        let listeners: Vec<_> = self
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for listener in listeners {
            listener.reconciled(key, context);
        }
    }
}

impl Inner {
    /// Forgets what was made from `cluster`'s old kubeconfig, and probes
    /// it again unless it is gone.
    pub(crate) fn local_cluster_changed(self: &Arc<Self>, cluster: &ClusterRef) {
        self.forget_targets(|reach| &reach.cluster == cluster);
        self.probes.stop(|probed| probed == cluster);
        self.watches.stop(|(watched, _, _)| watched == cluster);
        let id = ResourceId::new(
            Kind::Cluster,
            vec![cluster.provider.clone(), cluster.cluster.clone()],
        );
        if matches!(self.db.file(&id), Ok(Some(_))) {
            self.ownership.known_cluster(cluster, true);
            if self.ownership.probes_here(cluster) {
                self.probe(cluster.clone());
            }
        } else {
            self.ownership.known_cluster(cluster, false);
            if let Err(error) = self.contexts.forget_health(cluster) {
                tracing::warn!(%cluster, %error, "could not forget a deleted cluster's health");
            }
        }
    }
}

/// Why a reconcile could not run.
#[derive(Debug, thiserror::Error)]
pub enum RsyncError {
    /// The context could not be read or its status written.
    #[error(transparent)]
    Context(#[from] wasmco_store::appcontext::ContextError),
    /// The clusters could not be listed.
    #[error(transparent)]
    Db(#[from] wasmco_store::db::DbError),
    /// The other hosts could not be reached through the store.
    #[error(transparent)]
    Store(#[from] wasmco_store::StoreError),
}

/// A cluster as one context reaches it: with whose credentials, and the
/// namespace its objects that name none go into.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Reach {
    pub(crate) cluster: ClusterRef,
    pub(crate) namespace: String,
    /// `(project, logical cloud)` whose user's kubeconfig is used; `None`
    /// is the cluster's own.
    pub(crate) cloud_user: Option<(String, String)>,
}

impl Reach {
    /// With the cluster's own kubeconfig, into `default`.
    pub(crate) fn admin(cluster: &ClusterRef) -> Self {
        Reach {
            cluster: cluster.clone(),
            namespace: Access::default().namespace().to_owned(),
            cloud_user: None,
        }
    }

    /// As `meta` asks.
    pub(crate) fn of(cluster: &ClusterRef, meta: &ContextMeta) -> Self {
        Reach {
            cluster: cluster.clone(),
            namespace: meta.access.namespace().to_owned(),
            cloud_user: meta
                .access
                .cloud_user
                .as_ref()
                .map(|cloud| (meta.project.clone(), cloud.clone())),
        }
    }
}

impl Inner {
    /// The target of `cluster` with its own kubeconfig.
    pub(crate) async fn target(
        &self,
        cluster: &ClusterRef,
    ) -> Result<Arc<dyn SyncTarget>, SyncError> {
        self.target_as(&Reach::admin(cluster)).await
    }

    /// The target of a cluster as `reach` has it, made once.
    pub(crate) async fn target_as(&self, reach: &Reach) -> Result<Arc<dyn SyncTarget>, SyncError> {
        if let Some(target) = self
            .targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(reach)
            .cloned()
        {
            return Ok(target);
        }
        let target: Arc<dyn SyncTarget> = match &self.config.directory {
            Some(directory) => Arc::new(DirectoryTarget::new(
                directory.join(reach.cluster.to_string()),
            )),
            None => Arc::new(KubeTarget::new(
                self.client_config(reach).await?,
                reach.cloud_user.is_some(),
            )?),
        };
        self.targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(reach.clone(), target.clone());
        Ok(target)
    }

    /// Forgets the targets of `cluster` that `which` picks.
    pub(crate) fn forget_targets(&self, which: impl Fn(&Reach) -> bool) {
        self.targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|reach, _| !which(reach));
    }

    /// The client configuration `reach` asks for, from the stored kubeconfig
    /// (the cluster's, or its logical cloud user's).
    pub(crate) async fn client_config(&self, reach: &Reach) -> Result<kube::Config, SyncError> {
        let cluster = &reach.cluster;
        let kubeconfig = match &reach.cloud_user {
            None => {
                let id = ResourceId::new(
                    Kind::Cluster,
                    vec![cluster.provider.clone(), cluster.cluster.clone()],
                );
                self.db
                    .file(&id)
                    .map_err(|e| SyncError::Config(e.to_string()))?
                    .ok_or_else(|| {
                        SyncError::Config(format!("cluster {cluster} has no kubeconfig"))
                    })?
            }
            Some((project, cloud)) => self.cloud_user_kubeconfig(project, cloud, cluster)?,
        };
        // Checked again here, not only at upload: a kubeconfig stored by an
        // older version, or a policy tightened since, must not reach kube-rs.
        let refused = |e: wasmco_pki::kubeconfig::KubeconfigError| SyncError::Config(e.to_string());
        let mut config = self
            .config
            .kubeconfigs
            .check(&kubeconfig)
            .map_err(refused)?
            .client_config(&self.config.kubeconfigs)
            .await
            .map_err(refused)?;
        config.default_namespace = reach.namespace.clone();
        config.connect_timeout = Some(self.config.connect_timeout);
        config.read_timeout = Some(self.config.request_timeout);
        config.write_timeout = Some(self.config.request_timeout);
        // Counted from each request, not from when its pooled connection
        // last saw traffic.
        config.reset_reader_on_write = true;
        Ok(config)
    }
}
