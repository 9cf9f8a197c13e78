//! Which host reconciles which target, when several hosts share a store.
//!
//! Every host knows every target (from the store at start, then from what
//! the hosts tell each other). A target goes to the live host that
//! [`preferred_host`] picks for it; that host claims it (a key bound to
//! its lease) and runs its worker. When a host dies its claims expire with
//! its lease, the survivors see the owners go and claim what now falls to
//! them; when a host joins, the others release what now falls to it. A
//! host that lost its lease stops every worker, since its targets may be
//! others' now.
//!
//! State changes reach the owner by the same path, whichever host made
//! them: a `target/<key>` signal to every host.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::ContextStore;
use wasmco_store::db::ResourceDb;
use wasmco_store::hosts::{HostEvent, HostGroup, HostInfo, preferred_host};

use crate::clients::all_clusters;
use crate::error::RsyncError;
use crate::health::Health;
use crate::worker::Workers;

/// How often ownership is decided again without an event asking for it:
/// the safety net under the watch.
const BALANCE_INTERVAL: Duration = Duration::from_secs(2);

/// How long a target may stay without an owner before any host takes it.
const ORPHAN_AFTER: Duration = Duration::from_secs(10);

/// Timer ticks between full scans of the stored targets.
const RESCAN_TICKS: u32 = 15;

const TARGET_TOPIC: &str = "target/";
const CLUSTER_TOPIC: &str = "cluster/";
/// A cluster answers again after being away: every host's workers that
/// deploy there reconcile at once.
const BACK_TOPIC: &str = "back/";

/// What a host does when a cluster's record changed.
pub(crate) type ClusterChanged = Box<dyn Fn(&ClusterRef) + Send + Sync>;

/// What this host knows of the other hosts' work, and the workers and
/// probes it starts and stops to match.
pub(crate) struct Ownership {
    pub(crate) group: Arc<dyn HostGroup>,
    db: ResourceDb,
    contexts: ContextStore,
    runtime: tokio::runtime::Handle,
    workers: Arc<Workers>,
    health: Arc<Health>,
    cluster_changed: ClusterChanged,
    /// Every target with a state, as far as this host knows.
    known: Mutex<BTreeSet<String>>,
    /// Since when each target has had no owner: past [`ORPHAN_AFTER`] any
    /// host takes it, should the host it falls to not.
    unowned_since: Mutex<HashMap<String, Instant>>,
    /// The hosts alive at the last look, which share the probing.
    live: Mutex<Vec<HostInfo>>,
    /// Every cluster, as of the last scan.
    clusters: Mutex<BTreeSet<ClusterRef>>,
}

impl Ownership {
    pub(crate) fn new(
        group: Arc<dyn HostGroup>,
        db: ResourceDb,
        contexts: ContextStore,
        runtime: tokio::runtime::Handle,
        workers: Arc<Workers>,
        health: Arc<Health>,
        cluster_changed: ClusterChanged,
    ) -> Self {
        Ownership {
            group,
            db,
            contexts,
            runtime,
            workers,
            health,
            cluster_changed,
            known: Mutex::default(),
            unowned_since: Mutex::default(),
            live: Mutex::default(),
            clusters: Mutex::default(),
        }
    }

    /// Notes that `cluster` exists (or, with `false`, no longer does).
    pub(crate) fn known_cluster(&self, cluster: &ClusterRef, exists: bool) {
        let mut clusters = self.clusters.lock().unwrap_or_else(|p| p.into_inner());
        if exists {
            clusters.insert(cluster.clone());
        } else {
            clusters.remove(cluster);
        }
    }

    /// Whether this host probes `cluster`: alone, every one; sharing the
    /// store, those that fall to it as targets do, so that each cluster is
    /// probed once and every host reads the record.
    pub(crate) fn probes_here(&self, cluster: &ClusterRef) -> bool {
        if !self.group.shared() {
            return true;
        }
        if !self.group.holds_lease() {
            return false;
        }
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        preferred_host(&live, &format!("probe/{cluster}"))
            .is_some_and(|host| host.id == self.group.me().id)
    }

    fn known(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells every host that `key`'s state changed; its owner reconciles.
    pub(crate) fn target_changed(&self, key: &str) {
        if let Err(error) = self.group.tell(&format!("{TARGET_TOPIC}{key}")) {
            // The owner's resync will find it.
            tracing::warn!(target = key, %error, "could not tell the other hosts of a change");
            if self.workers.running(key) {
                self.workers.nudge(key);
            }
        }
    }

    /// Tells every host that `cluster` answers again.
    pub(crate) fn cluster_back(&self, cluster: &ClusterRef) {
        if !self.group.shared() {
            self.workers.nudge_all();
            return;
        }
        let topic = format!("{BACK_TOPIC}{}/{}", cluster.provider, cluster.cluster);
        if let Err(error) = self.group.tell(&topic) {
            tracing::warn!(%cluster, %error, "could not tell the other hosts a cluster is back");
            self.workers.nudge_all();
        }
    }

    /// Starts the probes of the clusters that fall to this host and stops
    /// the others'; with `rescan`, after reading the clusters again.
    fn share_probes(&self, rescan: bool) -> Result<(), RsyncError> {
        if rescan {
            *self.clusters.lock().unwrap_or_else(|p| p.into_inner()) =
                all_clusters(&self.db)?.into_iter().collect();
        }
        let clusters: Vec<ClusterRef> = self
            .clusters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        for cluster in clusters {
            if self.probes_here(&cluster) {
                self.health.probe(cluster);
            } else {
                self.health.stop(|probed| *probed == cluster);
            }
        }
        Ok(())
    }

    /// Tells every host that `cluster` changed.
    pub(crate) fn shared_cluster_changed(&self, cluster: &ClusterRef) {
        let topic = format!("{CLUSTER_TOPIC}{}/{}", cluster.provider, cluster.cluster);
        if let Err(error) = self.group.tell(&topic) {
            tracing::warn!(%cluster, %error, "could not tell the other hosts of a cluster change");
            (self.cluster_changed)(cluster);
        }
    }

    /// Decides again which targets this host works on, and starts and
    /// stops workers to match.
    fn rebalance(&self, rescan: bool) -> Result<(), RsyncError> {
        let group = &self.group;
        if !group.holds_lease() {
            self.health.stop(|_| true);
            let stopped = self.workers.stop_all();
            if stopped > 0 {
                tracing::warn!(
                    stopped,
                    "lost this host's lease; its targets are others' now"
                );
            }
            return Ok(());
        }
        if rescan {
            // Deleted targets drop out here.
            let keys = self.contexts.states()?.into_iter().map(|(key, _)| key);
            *self.known() = keys.collect();
        }
        let live = group.live()?;
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = live.clone();
        self.share_probes(rescan)?;
        let owners = group.owners()?;
        let me = &group.me().id;
        let known: Vec<String> = self.known().iter().cloned().collect();
        let mut unowned_since = self.unowned_since.lock().unwrap_or_else(|p| p.into_inner());
        unowned_since.retain(|key, _| !owners.contains_key(key));
        let mut mine = BTreeSet::new();
        for key in known {
            let preferred = preferred_host(&live, &key).map(|host| &host.id);
            match owners.get(&key) {
                Some(owner) if owner == me => {
                    if preferred.is_some_and(|preferred| preferred != me) {
                        // A host joined that this one falls to.
                        self.workers.stop(&key);
                        group.release(&key)?;
                        continue;
                    }
                    mine.insert(key.clone());
                    if !self.workers.running(&key) {
                        self.workers.nudge(&key);
                    }
                }
                Some(_) => {}
                None => {
                    let orphaned = unowned_since
                        .entry(key.clone())
                        .or_insert_with(Instant::now)
                        .elapsed()
                        > ORPHAN_AFTER;
                    if (preferred == Some(me) || orphaned) && group.claim(&key)? {
                        tracing::info!(target = %key, "took up");
                        mine.insert(key.clone());
                        self.workers.nudge(&key);
                    }
                }
            }
        }
        for key in self.workers.keys() {
            if !mine.contains(&key) {
                self.workers.stop(&key);
            }
        }
        for (key, owner) in &owners {
            if owner == me && !mine.contains(key) && !self.known().contains(key) {
                // Its target is gone.
                group.release(key)?;
            }
        }
        Ok(())
    }

    /// What this host works on and who works on the rest: target → host id.
    pub(crate) fn work(&self) -> Result<std::collections::BTreeMap<String, String>, RsyncError> {
        let group = &self.group;
        if group.shared() {
            return Ok(group.owners()?);
        }
        let me = &group.me().id;
        Ok(self
            .workers
            .keys()
            .into_iter()
            .map(|key| (key, me.clone()))
            .collect())
    }
}

/// Starts listening to the other hosts and deciding ownership, for as long
/// as the engine lives.
pub(crate) fn start(ownership: &Arc<Ownership>) -> Result<(), RsyncError> {
    let (events, heard) = mpsc::unbounded_channel();
    // Decide at once, not after the first interval.
    let _ = events.send(HostEvent::Membership);
    ownership
        .group
        .listen(Arc::new(move |event| drop(events.send(event))))?;
    ownership
        .runtime
        .spawn(coordinate(Arc::downgrade(ownership), heard));
    Ok(())
}

/// Acts on what the hosts say, and decides ownership again when they come
/// or go and every [`BALANCE_INTERVAL`].
async fn coordinate(weak: Weak<Ownership>, mut heard: mpsc::UnboundedReceiver<HostEvent>) {
    let mut rescan = true;
    let mut ticks: u32 = 0;
    loop {
        let first = tokio::select! {
            event = heard.recv() => match event {
                Some(event) => Some(event),
                None => return,
            },
            () = tokio::time::sleep(BALANCE_INTERVAL) => None,
        };
        let Some(ownership) = weak.upgrade() else {
            return;
        };
        // A timer tick decides again; every so often, from a fresh scan of
        // the targets too, in case a signal was lost.
        let mut rebalance = first.is_none();
        if first.is_none() {
            ticks = ticks.wrapping_add(1);
            rescan |= ticks.is_multiple_of(RESCAN_TICKS);
        }
        let mut events: Vec<HostEvent> = first.into_iter().collect();
        while let Ok(event) = heard.try_recv() {
            events.push(event);
        }
        let mut clusters = Vec::new();
        for event in events {
            match event {
                HostEvent::Membership => rebalance = true,
                HostEvent::Told(topic) => {
                    if let Some(key) = topic.strip_prefix(TARGET_TOPIC) {
                        if ownership.workers.running(key) {
                            ownership.workers.nudge(key);
                        } else {
                            // Someone's to take it up: perhaps this host.
                            ownership.known().insert(key.to_owned());
                            rebalance = true;
                        }
                    } else if let Some((provider, cluster)) = topic
                        .strip_prefix(CLUSTER_TOPIC)
                        .and_then(|c| c.split_once('/'))
                    {
                        clusters.push(ClusterRef::new(provider, cluster));
                    } else if topic.starts_with(BACK_TOPIC) {
                        ownership.workers.nudge_all();
                    }
                }
            }
        }
        let work = {
            let ownership = ownership.clone();
            let scan = std::mem::take(&mut rescan);
            tokio::task::spawn_blocking(move || {
                for cluster in &clusters {
                    (ownership.cluster_changed)(cluster);
                }
                if rebalance || scan {
                    ownership.rebalance(scan)
                } else {
                    Ok(())
                }
            })
        };
        drop(ownership);
        match work.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "could not decide which targets this host works on");
                rescan = true;
            }
            Err(panic) => tracing::error!(%panic, "deciding ownership panicked"),
        }
    }
}
