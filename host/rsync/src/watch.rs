//! Drift found as it happens. Each cluster gets a watch per kind rsync has
//! applied there (kube-runtime's watcher, with bookmarks), over objects
//! carrying a DIG label. A change someone else made, or a deletion, goes
//! to that DIG's worker, which repairs the object at once, beside any
//! reconcile it is in. The periodic resync stays as the safety net for a
//! watch that missed something: it looks again only at the kinds whose
//! watch could have (see [`Watches::vouches_since`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use futures_util::StreamExt;

use wasmco_core::ClusterRef;

use crate::clients::Clients;
use crate::config::RsyncConfig;
use crate::owner::DIG_LABEL;
use crate::target::{Changed, Watched};
use crate::tasks::KeyedTasks;

/// An object of a target that a watch saw changed or deleted.
#[derive(Debug)]
pub(crate) struct Drifted {
    pub(crate) cluster: ClusterRef,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) change: Changed,
}

/// One object of a target on one cluster.
pub(crate) type ObjectId = (ClusterRef, String, String, Option<String>, String);

impl Drifted {
    /// The object it reports.
    pub(crate) fn object(&self) -> ObjectId {
        (
            self.cluster.clone(),
            self.api_version.clone(),
            self.kind.clone(),
            self.change.namespace.clone(),
            self.change.name.clone(),
        )
    }
}

/// What a watch hands the drift it sees to.
pub(crate) type DriftSink = Box<dyn Fn(Drifted) + Send + Sync>;

/// A watch's cluster, `apiVersion` and kind.
type WatchKey = (ClusterRef, String, String);

/// Since when one run of a watch has reported every change: `None`
/// before its list is done, and after a gap until the next one is. Each
/// run has its own, so that a stopped run cannot vouch for a later one.
#[derive(Default)]
struct Complete(Mutex<Option<Instant>>);

impl Complete {
    fn set(&self, since: Option<Instant>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = since;
    }

    fn since(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The watches of the kinds rsync applied on each cluster.
pub(crate) struct Watches {
    clients: Arc<Clients>,
    config: Arc<RsyncConfig>,
    runtime: tokio::runtime::Handle,
    /// The running watches, by cluster and kind (`apiVersion`, `kind`).
    running: KeyedTasks<WatchKey>,
    /// Since when each running watch has been complete.
    complete: Mutex<HashMap<WatchKey, Arc<Complete>>>,
    drifted: DriftSink,
}

impl Watches {
    pub(crate) fn new(
        clients: Arc<Clients>,
        config: Arc<RsyncConfig>,
        runtime: tokio::runtime::Handle,
        drifted: DriftSink,
    ) -> Self {
        Watches {
            clients,
            config,
            runtime,
            running: KeyedTasks::default(),
            complete: Mutex::default(),
            drifted,
        }
    }

    /// Watches `kind` on `cluster`, unless it is watched already.
    pub(crate) fn watch(self: &Arc<Self>, cluster: &ClusterRef, api_version: &str, kind: &str) {
        let key = (cluster.clone(), api_version.to_owned(), kind.to_owned());
        let watches = Arc::downgrade(self);
        let (watched, complete) = (key.clone(), Arc::new(Complete::default()));
        let run = complete.clone();
        // Held across the start, as across a stop: a run stopped meanwhile
        // cannot leave its state behind to vouch for it.
        let mut runs = self.lock();
        let started = self.running.start(key.clone(), &self.runtime, move || {
            watch_loop(watches, watched, run)
        });
        if started {
            runs.insert(key, complete);
        }
    }

    /// Stops the watches `which` picks.
    pub(crate) fn stop(&self, which: impl Fn(&WatchKey) -> bool) {
        let mut runs = self.lock();
        self.running.stop(&which);
        runs.retain(|key, _| !which(key));
    }

    /// Whether the watch of `kind` on `cluster` has reported every change
    /// made there since `since`: nothing changed that it did not report.
    pub(crate) fn vouches_since(
        &self,
        cluster: &ClusterRef,
        api_version: &str,
        kind: &str,
        since: Instant,
    ) -> bool {
        let key = (cluster.clone(), api_version.to_owned(), kind.to_owned());
        self.lock()
            .get(&key)
            .and_then(|complete| complete.since())
            .is_some_and(|complete| complete <= since)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<WatchKey, Arc<Complete>>> {
        self.complete.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Follows one kind on one cluster until the engine is dropped or the
/// watch is stopped; a target that cannot watch (a directory) ends it.
async fn watch_loop(weak: Weak<Watches>, watched: WatchKey, complete: Arc<Complete>) {
    let (cluster, api_version, kind) = watched;
    let mut retries = None;
    loop {
        complete.set(None);
        let Some(watches) = weak.upgrade() else {
            return;
        };
        let changes = match watches.clients.target(&cluster).await {
            Ok(target) => target.changes(&api_version, &kind, DIG_LABEL).await,
            Err(error) => Err(error),
        };
        let mut changes = match changes {
            Ok(Some(changes)) => changes,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%cluster, %kind, %error, "cannot watch yet");
                let pause = retries
                    .get_or_insert_with(|| watches.config.retries())
                    .next()
                    .unwrap_or(watches.config.backoff.1);
                drop(watches);
                tokio::time::sleep(pause).await;
                continue;
            }
        };
        let pause = watches.config.backoff.1;
        drop(watches);
        tracing::debug!(%cluster, %kind, "watching for drift");
        while let Some(watched) = changes.next().await {
            let change = match watched {
                Watched::Changed(change) => change,
                Watched::Listed => {
                    complete.set(Some(Instant::now()));
                    continue;
                }
                Watched::Gap => {
                    complete.set(None);
                    continue;
                }
            };
            let Some(watches) = weak.upgrade() else {
                return;
            };
            (watches.drifted)(Drifted {
                cluster: cluster.clone(),
                api_version: api_version.clone(),
                kind: kind.clone(),
                change,
            });
        }
        // kube-runtime's watcher restarts by itself; an end is odd.
        tokio::time::sleep(pause).await;
    }
}
