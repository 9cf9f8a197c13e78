//! Watches: every change under a prefix reported, across broken
//! connections, from the revision the watch was asked at.

use std::time::Duration;

use etcd_client::{Client, GetOptions, WatchOptions};

use super::connection::EtcdStore;
use super::failure::failed;
use crate::error::StoreError;
use crate::kv::{Change, OnChange};

impl EtcdStore {
    /// Calls `on_change` for every change under `prefix` made after this
    /// returns, for as long as the store's runtime runs.
    pub(super) fn watch_from_now(
        &self,
        prefix: &[u8],
        on_change: OnChange,
    ) -> Result<(), StoreError> {
        // From the store's revision now, so that no change made after this
        // returns is missed, however long the watch takes to be set up.
        let mut kv = self.kv();
        let key = prefix.to_vec();
        let now = self
            .run(async move {
                let options = GetOptions::new()
                    .with_prefix()
                    .with_keys_only()
                    .with_limit(1);
                kv.get(key, Some(options)).await
            })
            .map_err(failed("watch"))?
            .header()
            .map(|header| header.revision());
        let client = self.connection.client.clone();
        self.connection.runtime.spawn(watch(
            client,
            prefix.to_vec(),
            now.map(|revision| revision + 1),
            on_change,
        ));
        Ok(())
    }
}

/// Reports every change under `prefix` from `next_revision` on (or from
/// when the watch is made), for as long as the
/// runtime runs: a broken watch is made again from the revision after the
/// last one it reported, so nothing is missed unless etcd compacted it away.
async fn watch(
    client: Client,
    prefix: Vec<u8>,
    mut next_revision: Option<i64>,
    on_change: OnChange,
) {
    loop {
        let mut options = WatchOptions::new().with_prefix();
        if let Some(revision) = next_revision {
            options = options.with_start_revision(revision);
        }
        match client
            .watch_client()
            .watch(prefix.clone(), Some(options))
            .await
        {
            Ok(mut stream) => {
                while let Ok(Some(answer)) = stream.message().await {
                    if answer.canceled() {
                        // Compacted past where it was: start afresh.
                        tracing::warn!(reason = answer.cancel_reason(), "etcd watch cancelled");
                        next_revision = None;
                        on_change(Change::Missed);
                        break;
                    }
                    let mut last = None;
                    for entry in answer.events().iter().filter_map(|event| event.kv()) {
                        on_change(Change::Key(entry.key().to_vec()));
                        last = Some(entry.mod_revision());
                    }
                    // Past the last event reported; with none, past what a
                    // progress report says the watch has seen (not what
                    // the answer that made it says: older events may
                    // still be on their way then).
                    next_revision = match last {
                        Some(revision) => Some(revision + 1),
                        None if !answer.created() => {
                            answer.header().map(|h| h.revision() + 1).or(next_revision)
                        }
                        None => next_revision,
                    };
                }
            }
            Err(error) => tracing::debug!(%error, "etcd watch not made; trying again"),
        }
        if next_revision.is_none() {
            on_change(Change::Missed);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
