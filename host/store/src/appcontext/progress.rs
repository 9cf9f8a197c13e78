//! What rsync records while it makes clusters match a revision: each
//! resource's status, whether it reaches each cluster, and the hook events
//! already run there.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::ClusterRef;
use wasmco_core::wire::{Connectivity, ResourceStatus};

use super::error::ContextError;
use super::store::{ContextStore, Fence, json};
use crate::kv::BatchOp;

impl ContextStore {
    /// The hook events already run for `app` on `cluster` (by any revision).
    pub fn hooks_run(
        &self,
        dig: &str,
        app: &str,
        cluster: &ClusterRef,
    ) -> Result<BTreeSet<HookEvent>, ContextError> {
        Ok(self
            .get_json(&format!("ctx/{dig}/hooks/{app}/{cluster}"))?
            .unwrap_or_default())
    }

    /// Records the hook events run for `app` on `cluster`; an empty set
    /// forgets them (the app is gone from there).
    pub fn put_hooks_run(
        &self,
        dig: &str,
        app: &str,
        cluster: &ClusterRef,
        events: &BTreeSet<HookEvent>,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("ctx/{dig}/hooks/{app}/{cluster}").into_bytes();
        let op = if events.is_empty() {
            BatchOp::Delete(key)
        } else {
            BatchOp::Put(key, json(events))
        };
        self.commit(dig, vec![op], fence, false)
    }

    /// Records the status of resources of `app` on `cluster`, in one write.
    pub fn put_statuses(
        &self,
        dig: &str,
        revision: u64,
        app: &str,
        cluster: &ClusterRef,
        statuses: &[(String, ResourceStatus)],
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let ops = statuses
            .iter()
            .map(|(key, status)| {
                BatchOp::Put(
                    format!("ctx/{dig}/rev/{revision:010}/status/{app}/{cluster}/{key}")
                        .into_bytes(),
                    json(status),
                )
            })
            .collect();
        // Progress only: after a crash rsync applies the context again
        // anyway, so a write split to fit the store is no loss.
        let ops: Vec<BatchOp> = ops;
        for chunk in ops.chunks(self.store.max_batch()) {
            self.commit(dig, chunk.to_vec(), fence, true)?;
        }
        Ok(())
    }

    /// The recorded statuses of `app`'s resources on `cluster`, by `name+Kind`.
    pub fn statuses_on(
        &self,
        dig: &str,
        revision: u64,
        app: &str,
        cluster: &ClusterRef,
    ) -> Result<HashMap<String, ResourceStatus>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/status/{app}/{cluster}/");
        self.store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .map(|(key, value)| {
                let key = String::from_utf8_lossy(&key).into_owned();
                let status =
                    serde_json::from_slice(&value).map_err(|e| ContextError::corrupt(&key, e))?;
                Ok((key[prefix.len()..].to_owned(), status))
            })
            .collect()
    }

    /// Records whether rsync reaches `cluster`.
    pub fn put_connectivity(
        &self,
        dig: &str,
        revision: u64,
        cluster: &ClusterRef,
        state: Connectivity,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("ctx/{dig}/rev/{revision:010}/connectivity/{cluster}");
        let value = state.as_str().as_bytes();
        if self.store.get(key.as_bytes())?.as_deref() == Some(value) {
            return Ok(());
        }
        let op = BatchOp::Put(key.into_bytes(), value.to_vec());
        self.commit(dig, vec![op], fence, true)
    }

    /// Every recorded resource status of a revision: (app, cluster, `name+Kind`) → status.
    pub fn statuses(
        &self,
        dig: &str,
        revision: u64,
    ) -> Result<BTreeMap<(String, ClusterRef, String), ResourceStatus>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/status/");
        let mut out = BTreeMap::new();
        for (key, value) in self.store.scan_prefix(prefix.as_bytes())? {
            let key = String::from_utf8_lossy(&key).into_owned();
            let mut parts = key[prefix.len()..].splitn(3, '/');
            let (Some(app), Some(cluster), Some(resource)) = (
                parts.next(),
                parts.next().and_then(ClusterRef::parse),
                parts.next(),
            ) else {
                continue;
            };
            let status =
                serde_json::from_slice(&value).map_err(|e| ContextError::corrupt(&key, e))?;
            out.insert((app.to_owned(), cluster, resource.to_owned()), status);
        }
        Ok(out)
    }

    /// Per cluster, whether rsync reaches it.
    pub fn connectivity(
        &self,
        dig: &str,
        revision: u64,
    ) -> Result<BTreeMap<ClusterRef, Connectivity>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/connectivity/");
        self.store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .map(|(key, value)| {
                let key = String::from_utf8_lossy(&key).into_owned();
                let cluster = ClusterRef::parse(&key[prefix.len()..]);
                let state = Connectivity::parse(&value);
                match (cluster, state) {
                    (Some(cluster), Some(state)) => Ok((cluster, state)),
                    _ => Err(ContextError::corrupt(
                        &key,
                        format!(
                            "{:?} is not a connectivity",
                            String::from_utf8_lossy(&value)
                        ),
                    )),
                }
            })
            .collect()
    }
}
