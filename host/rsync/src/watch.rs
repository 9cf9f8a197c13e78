//! Drift found as it happens. Each cluster gets a watch per kind rsync has
//! applied there (kube-runtime's watcher, with bookmarks), over objects
//! carrying a DIG label. A change someone else made, or a deletion, asks
//! that DIG's worker for a reconcile soon: without stopping the one it is
//! in, and at most one more however many events arrive. The periodic
//! resync stays as the safety net for a watch that missed something.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use futures_util::StreamExt;
use tokio::task::AbortHandle;

use wasmco_core::ClusterRef;

use crate::{DIG_LABEL, Inner};

/// The running watches, by cluster and kind (`apiVersion`, `kind`).
#[derive(Default)]
pub(crate) struct Watches {
    running: Mutex<HashMap<(ClusterRef, String, String), AbortHandle>>,
}

impl Watches {
    /// Stops every watch of `cluster` (changed or deleted).
    pub(crate) fn stop(&self, cluster: &ClusterRef) {
        self.lock().retain(|(watched, _, _), watch| {
            if watched == cluster {
                watch.abort();
            }
            watched != cluster
        });
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(ClusterRef, String, String), AbortHandle>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        for watch in self.lock().values() {
            watch.abort();
        }
    }
}

impl Inner {
    /// Watches `kind` on `cluster`, unless it is watched already.
    pub(crate) fn watch(self: &Arc<Self>, cluster: &ClusterRef, api_version: &str, kind: &str) {
        let key = (cluster.clone(), api_version.to_owned(), kind.to_owned());
        let mut running = self.watches.lock();
        if running.get(&key).is_some_and(|w| !w.is_finished()) {
            return;
        }
        let task = self.runtime.spawn(watch_loop(
            Arc::downgrade(self),
            cluster.clone(),
            api_version.to_owned(),
            kind.to_owned(),
        ));
        running.insert(key, task.abort_handle());
    }
}

/// Follows one kind on one cluster until the engine is dropped or the
/// watch is stopped; a target that cannot watch (a directory) ends it.
async fn watch_loop(engine: Weak<Inner>, cluster: ClusterRef, api_version: String, kind: String) {
    let mut retries = None;
    loop {
        let Some(inner) = engine.upgrade() else {
            return;
        };
        let changes = match inner.target(&cluster).await {
            Ok(target) => target.changes(&api_version, &kind, DIG_LABEL).await,
            Err(error) => Err(error),
        };
        let mut changes = match changes {
            Ok(Some(changes)) => changes,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%cluster, %kind, %error, "cannot watch yet");
                let pause = retries
                    .get_or_insert_with(|| inner.backoff())
                    .next()
                    .unwrap_or(inner.config.backoff.1);
                drop(inner);
                tokio::time::sleep(pause).await;
                continue;
            }
        };
        let pause = inner.config.backoff.1;
        drop(inner);
        tracing::debug!(%cluster, %kind, "watching for drift");
        while let Some(owner) = changes.next().await {
            let Some(inner) = engine.upgrade() else {
                return;
            };
            inner.resync_soon(&owner);
        }
        // kube-runtime's watcher restarts by itself; an end is odd.
        tokio::time::sleep(pause).await;
    }
}
