//! A DIG's revisions: each written whole with the state that makes it
//! current, read back app by app, and the footprint of every cluster and
//! kind they put objects on.

use std::collections::{BTreeMap, BTreeSet};

use wasmco_core::hooks::{Hook, StoredHook};
use wasmco_core::resource::{ClusterRef, Resource, ResourceKey};

use super::error::ContextError;
use super::footprint::Footprint;
use super::model::{ContextMeta, StoredApp, StoredContext, StoredOverride, StoredPlacement};
use super::state::DigState;
use super::store::{ContextStore, Fence, json};
use crate::kv::BatchOp;

/// Per cluster, the resources of an app that differ from its base.
type Diffs = BTreeMap<ClusterRef, Vec<(ResourceKey, Option<Resource>)>>;

impl ContextStore {
    /// Writes `apps` as revision `meta.revision` and `state`: in one batch
    /// when the store takes that many changes at once; else the revision's
    /// keys first, then the state that makes it current, so a context is
    /// still either whole and current or not current at all.
    pub fn write(
        &self,
        dig: &str,
        meta: &ContextMeta,
        apps: &[StoredApp],
        state: &DigState,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let prefix = format!("ctx/{dig}/rev/{:010}", meta.revision);
        let mut ops = vec![BatchOp::Put(
            format!("{prefix}/meta").into_bytes(),
            json(meta),
        )];
        for app in apps {
            ops.extend(app_writes(&prefix, app));
        }
        let footprint = self.footprint(dig)?.with(apps);
        ops.push(BatchOp::Put(
            format!("ctx/{dig}/footprint").into_bytes(),
            json(&footprint),
        ));
        ops.push(Self::state_op(dig, state));
        self.commit_revision(dig, &prefix, ops, fence)
    }

    /// Commits the writes of the revision at `prefix`, whose last two (the
    /// footprint and the state) make it current: at once when the store
    /// takes them in one batch, else in pieces with those two last.
    fn commit_revision(
        &self,
        dig: &str,
        prefix: &str,
        mut ops: Vec<BatchOp>,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let most = self.store.max_batch();
        if ops.len() <= most {
            return self.commit(dig, ops, fence, false);
        }
        // The footprint and the state go last, together: until they land
        // no reader looks at this revision.
        let current = ops.split_off(ops.len() - 2);
        let leftovers: Vec<BatchOp> = self
            .store
            .scan_prefix(format!("{prefix}/").as_bytes())?
            .into_iter()
            .map(|(key, _)| BatchOp::Delete(key))
            .collect();
        // Each piece fenced too: a host that lost the DIG's lock must not
        // write into a revision the new holder is writing.
        for chunk in leftovers.chunks(most).chain(ops.chunks(most)) {
            self.commit(dig, chunk.to_vec(), fence, false)?;
        }
        self.commit(dig, current, fence, false)
    }

    /// Stores `meta` over its revision's and `state`, in one write: a
    /// revision made current again with what it is held to now.
    pub fn put_meta(
        &self,
        dig: &str,
        meta: &ContextMeta,
        state: &DigState,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("ctx/{dig}/rev/{:010}/meta", meta.revision);
        if self.store.get(key.as_bytes())?.is_none() {
            return Err(ContextError::NoRevision(meta.revision));
        }
        let ops = vec![
            BatchOp::Put(key.into_bytes(), json(meta)),
            Self::state_op(dig, state),
        ];
        self.commit(dig, ops, fence, false)
    }

    /// Reads revision `revision` of the DIG's context.
    pub fn read(&self, dig: &str, revision: u64) -> Result<StoredContext, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}");
        let meta = self.read_meta(dig, revision)?;
        let apps = meta
            .app_order
            .iter()
            .map(|name| self.read_app(&prefix, name))
            .collect::<Result<_, _>>()?;
        Ok(StoredContext { meta, apps })
    }

    /// The meta of `dig`'s `revision` alone (what it was built for, its
    /// rollout's plan, its failover intent).
    pub fn read_meta(&self, dig: &str, revision: u64) -> Result<ContextMeta, ContextError> {
        self.get_json(&format!("ctx/{dig}/rev/{revision:010}/meta"))?
            .ok_or(ContextError::NoRevision(revision))
    }

    /// Revision `revision`'s meta, and every cluster one of its apps is
    /// placed on: what a watch over many DIGs reads, without manifests.
    pub fn read_placed(
        &self,
        dig: &str,
        revision: u64,
    ) -> Result<(ContextMeta, BTreeSet<ClusterRef>), ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}");
        let meta = self.read_meta(dig, revision)?;
        let mut placed = BTreeSet::new();
        for app in &meta.app_order {
            let placement: Vec<StoredPlacement> = self
                .get_json(&format!("{prefix}/app/{app}/placement"))?
                .unwrap_or_default();
            placed.extend(placement.into_iter().map(|p| p.cluster));
        }
        Ok((meta, placed))
    }

    /// App `name` of the revision at `prefix`.
    fn read_app(&self, prefix: &str, name: &str) -> Result<StoredApp, ContextError> {
        let app_prefix = format!("{prefix}/app/{name}");
        let manifests: Vec<serde_json::Value> = self
            .get_json(&format!("{app_prefix}/base"))?
            .unwrap_or_default();
        let base = manifests
            .into_iter()
            .map(|m| Resource::from_manifest(m).map_err(|e| ContextError::corrupt(&app_prefix, e)))
            .collect::<Result<_, _>>()?;
        let placement = self
            .get_json(&format!("{app_prefix}/placement"))?
            .unwrap_or_default();
        let diffs = self.read_diffs(&app_prefix)?;
        let hooks: Vec<StoredHook> = self
            .get_json(&format!("{app_prefix}/hooks"))?
            .unwrap_or_default();
        let hooks = hooks
            .into_iter()
            .map(|h| Hook::try_from(h).map_err(|e| ContextError::corrupt(&app_prefix, e)))
            .collect::<Result<_, _>>()?;
        Ok(StoredApp {
            name: name.to_owned(),
            base,
            placement,
            diffs,
            hooks,
        })
    }

    /// The per-cluster differences of the app at `app_prefix`.
    fn read_diffs(&self, app_prefix: &str) -> Result<Diffs, ContextError> {
        let mut diffs = BTreeMap::new();
        let diff_prefix = format!("{app_prefix}/diff/");
        for (key, bytes) in self.store.scan_prefix(diff_prefix.as_bytes())? {
            let key = String::from_utf8_lossy(&key).into_owned();
            let stored: Vec<(ResourceKey, StoredOverride)> =
                serde_json::from_slice(&bytes).map_err(|e| ContextError::corrupt(&key, e))?;
            let diff = stored
                .into_iter()
                .map(|(k, o)| match o {
                    StoredOverride::Set(m) => Resource::from_manifest(m)
                        .map(|r| (k, Some(r)))
                        .map_err(|e| ContextError::corrupt(&key, e)),
                    StoredOverride::Removed => Ok((k, None)),
                })
                .collect::<Result<_, _>>()?;
            let cluster = ClusterRef::parse(&key[diff_prefix.len()..])
                .ok_or_else(|| ContextError::corrupt(&key, "not a provider+cluster key"))?;
            diffs.insert(cluster, diff);
        }
        Ok(diffs)
    }

    /// Every cluster and kind the DIG's revisions put objects on. DIGs
    /// stored before the footprint was kept get theirs from every kept
    /// revision.
    pub fn footprint(&self, dig: &str) -> Result<Footprint, ContextError> {
        let key = format!("ctx/{dig}/footprint");
        if let Some(bytes) = self.store.get(key.as_bytes())? {
            return Footprint::from_stored(&bytes).map_err(|e| ContextError::corrupt(&key, e));
        }
        let mut footprint = Footprint::default();
        for revision in 1..=self.state(dig)?.latest {
            match self.read(dig, revision) {
                Ok(context) => footprint = footprint.with(&context.apps),
                Err(ContextError::NoRevision(_)) => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(footprint)
    }
}

/// The writes that store `app` in the revision at `prefix`: its base
/// (CRDs first), placement, hooks and each cluster's differences.
fn app_writes(prefix: &str, app: &StoredApp) -> Vec<BatchOp> {
    let app_prefix = format!("{prefix}/app/{}", app.name);
    let mut base: Vec<&Resource> = app.base.iter().collect();
    base.sort_by_key(|r| r.apply_rank());
    let manifests: Vec<&serde_json::Value> = base.iter().map(|r| &r.manifest).collect();
    let mut ops = vec![
        BatchOp::Put(format!("{app_prefix}/base").into_bytes(), json(&manifests)),
        BatchOp::Put(
            format!("{app_prefix}/placement").into_bytes(),
            json(&app.placement),
        ),
    ];
    if !app.hooks.is_empty() {
        let hooks: Vec<StoredHook> = app.hooks.iter().map(StoredHook::from).collect();
        ops.push(BatchOp::Put(
            format!("{app_prefix}/hooks").into_bytes(),
            json(&hooks),
        ));
    }
    for (cluster, diff) in &app.diffs {
        let stored: Vec<(&ResourceKey, StoredOverride)> = diff
            .iter()
            .map(|(key, resource)| {
                let o = match resource {
                    Some(r) => StoredOverride::Set(r.manifest.clone()),
                    None => StoredOverride::Removed,
                };
                (key, o)
            })
            .collect();
        ops.push(BatchOp::Put(
            format!("{app_prefix}/diff/{cluster}").into_bytes(),
            json(&stored),
        ));
    }
    ops
}
