//! The engine: the owners of rsync's state (clients, probes, watches,
//! workers, ownership) wired together, the hand-off port the orchestrator
//! calls, and start-up.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use wasmco_core::{ClusterRef, Kind};
use wasmco_store::appcontext::{ContextStore, DeployState, ReconcileListener, SyncEngine};
use wasmco_store::db::{ResourceDb, ResourceId};
use wasmco_store::hosts::HostGroup;

use crate::clients::{self, Clients};
use crate::config::RsyncConfig;
use crate::error::RsyncError;
use crate::health::Health;
use crate::metrics::RsyncMetrics;
use crate::ownership::{self, Ownership};
use crate::reconcile::Reconciler;
use crate::watch::{DriftSink, Watches};
use crate::worker::Workers;

/// The sync engine; cheap to clone.
#[derive(Clone)]
pub struct Rsync {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    db: ResourceDb,
    contexts: ContextStore,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) config: Arc<RsyncConfig>,
    pub(crate) clients: Arc<Clients>,
    health: Arc<Health>,
    watches: Arc<Watches>,
    reconciler: Arc<Reconciler>,
    workers: Arc<Workers>,
    ownership: Arc<Ownership>,
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
        let config = Arc::new(config);
        let inner = Arc::new_cyclic(|engine: &Weak<Inner>| {
            let clients = Arc::new(Clients::new(db.clone(), config.clone()));
            let health = Arc::new(Health::new(
                contexts.clone(),
                clients.clone(),
                config.clone(),
                runtime.clone(),
                on_engine(engine, |inner, cluster| {
                    inner.ownership.cluster_back(cluster);
                }),
            ));
            let watches = Arc::new(Watches::new(
                clients.clone(),
                config.clone(),
                runtime.clone(),
                drift_sink(engine),
            ));
            let reconciler = Arc::new(Reconciler::new(
                contexts.clone(),
                clients.clone(),
                health.clone(),
                watches.clone(),
                hosts.clone(),
                RsyncMetrics::default(),
                config.clone(),
            ));
            let workers = Arc::new(Workers::new(runtime.clone(), Arc::downgrade(&reconciler)));
            let ownership = Arc::new(Ownership::new(
                hosts,
                db.clone(),
                contexts.clone(),
                runtime.clone(),
                workers.clone(),
                health.clone(),
                on_engine(engine, |inner, cluster| {
                    inner.local_cluster_changed(cluster)
                }),
            ));
            Inner {
                db,
                contexts,
                runtime,
                config,
                clients,
                health,
                watches,
                reconciler,
                workers,
                ownership,
            }
        });
        Rsync { inner }
    }

    /// What rsync did, for `/metrics`.
    pub fn metrics(&self) -> &RsyncMetrics {
        &self.inner.reconciler.metrics
    }

    /// Takes up, after a restart, every target with a context and starts
    /// probing every cluster. A reconcile finds on the clusters what the
    /// crash left half done, so finished work is confirmed, unfinished work
    /// completed and leftovers removed, with no duplicate objects.
    ///
    /// With other hosts on the store, it takes up the targets that fall to
    /// this host, now and as hosts come and go.
    pub fn resume(&self) -> Result<usize, RsyncError> {
        let inner = &self.inner;
        if inner.ownership.group.shared() {
            // Probes are shared out with the targets.
            ownership::start(&inner.ownership)?;
            return Ok(0);
        }
        for cluster in clients::all_clusters(&inner.db)? {
            inner.health.probe(cluster);
        }
        let mut resumed = 0;
        for (key, state) in inner.contexts.states()? {
            if state.revision == 0
                || !matches!(
                    state.state,
                    DeployState::Instantiated | DeployState::Updated | DeployState::Terminated
                )
            {
                continue;
            }
            inner.workers.nudge(&key);
            resumed += 1;
        }
        Ok(resumed)
    }
}

/// A hook an owner calls back into the engine through, for as long as the
/// engine lives.
fn on_engine<T: ?Sized>(
    engine: &Weak<Inner>,
    act: impl Fn(&Inner, &T) + Send + Sync + 'static,
) -> Box<dyn Fn(&T) + Send + Sync> {
    let engine = engine.clone();
    Box::new(move |value| {
        if let Some(inner) = engine.upgrade() {
            act(&inner, value);
        }
    })
}

/// Hands what a watch saw drift to the engine's workers.
fn drift_sink(engine: &Weak<Inner>) -> DriftSink {
    let engine = engine.clone();
    Box::new(move |drifted| {
        if let Some(inner) = engine.upgrade() {
            inner.workers.drifted(drifted);
        }
    })
}

impl SyncEngine for Rsync {
    fn changed(&self, key: &str) {
        if self.inner.ownership.group.shared() {
            self.inner.ownership.target_changed(key);
        } else {
            self.inner.workers.nudge(key);
        }
    }

    fn cluster_changed(&self, cluster: &ClusterRef) {
        if self.inner.ownership.group.shared() {
            self.inner.ownership.shared_cluster_changed(cluster);
        } else {
            self.inner.local_cluster_changed(cluster);
        }
    }

    fn work(&self) -> BTreeMap<String, String> {
        self.inner.ownership.work().unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot read who works on what");
            BTreeMap::new()
        })
    }

    fn listen(&self, listener: Weak<dyn ReconcileListener>) {
        self.inner.workers.listeners().add(listener);
    }
}

impl Inner {
    /// Forgets what was made from `cluster`'s old kubeconfig, and probes
    /// it again unless it is gone.
    fn local_cluster_changed(&self, cluster: &ClusterRef) {
        self.clients.forget(|reach| &reach.cluster == cluster);
        self.health.stop(|probed| probed == cluster);
        self.watches.stop(|(watched, _, _)| watched == cluster);
        let id = ResourceId::new(
            Kind::Cluster,
            vec![cluster.provider.clone(), cluster.cluster.clone()],
        );
        if matches!(self.db.file(&id), Ok(Some(_))) {
            self.ownership.known_cluster(cluster, true);
            if self.ownership.probes_here(cluster) {
                self.health.probe(cluster.clone());
            }
        } else {
            self.ownership.known_cluster(cluster, false);
            if let Err(error) = self.contexts.forget_health(cluster) {
                tracing::warn!(%cluster, %error, "could not forget a deleted cluster's health");
            }
        }
    }
}
