//! Drift found as it happens. Each cluster gets a watch per kind rsync has
//! applied there (kube-runtime's watcher, with bookmarks), over objects
//! carrying a DIG label. A change someone else made, or a deletion, goes
//! to that DIG's worker, which repairs the object at once, beside any
//! reconcile it is in. The periodic resync stays as the safety net for a
//! watch that missed something.

use std::sync::{Arc, Weak};

use futures_util::StreamExt;

use wasmco_core::ClusterRef;

use crate::engine::Inner;
use crate::owner::DIG_LABEL;
use crate::tasks::KeyedTasks;
use crate::worker::Drifted;

/// The running watches, by cluster and kind (`apiVersion`, `kind`).
pub(crate) type Watches = KeyedTasks<(ClusterRef, String, String)>;

impl Inner {
    /// Watches `kind` on `cluster`, unless it is watched already.
    pub(crate) fn watch(self: &Arc<Self>, cluster: &ClusterRef, api_version: &str, kind: &str) {
        let key = (cluster.clone(), api_version.to_owned(), kind.to_owned());
        let engine = Arc::downgrade(self);
        let watched = key.clone();
        self.watches.start(key, &self.runtime, move || {
            let (cluster, api_version, kind) = watched;
            watch_loop(engine, cluster, api_version, kind)
        });
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
        while let Some(change) = changes.next().await {
            let Some(inner) = engine.upgrade() else {
                return;
            };
            inner.drifted(Drifted {
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
