//! AppContexts in the store, and the deployment state of each DIG.
//!
//! Key layout (this module owns the `ctx/` key space):
//!
//! ```text
//! ctx/<dig>/state                          DigState: current state, revision, history
//! ctx/<dig>/footprint                      every cluster and kind any revision put objects on
//! ctx/<dig>/rev/<revision>/meta            ContextMeta: inputs, app order, dependencies
//! ctx/<dig>/rev/<revision>/app/<app>/base  the app's manifests (once per app)
//! ctx/<dig>/rev/<revision>/app/<app>/placement  the app's clusters and their anyOf groups
//! ctx/<dig>/rev/<revision>/app/<app>/order  resorder and resdependency (CRDs before the rest)
//! ctx/<dig>/rev/<revision>/app/<app>/diff/<provider>+<cluster>  only what differs on that cluster
//! ctx/<dig>/rev/<revision>/app/<app>/hooks  the app's Helm hooks, by weight
//! ctx/<dig>/hooks/<app>/<provider>+<cluster>  the hook events already run there
//! ctx/<dig>/rev/<revision>/status/…        reserved for rsync's per-resource and per-cluster status
//! ctx/<dig>/note                           why a step after the deploy could not be done (a message)
//! health/<provider>+<cluster>             ClusterHealth: what rsync's probe last saw
//! ```
//!
//! A revision is written in one batch together with the state that points
//! at it, so a context is either whole and current or absent.

mod handoff;
mod state;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use wasmco_core::hooks::{Hook, HookEvent, StoredHook};
use wasmco_core::resource::{ClusterRef, Resource, ResourceKey};

use crate::{BatchOp, Expect, KvStore, StoreError};

pub use handoff::{ClusterFacts, NoSync, ReconcileListener, SyncEngine};
pub use state::{DigState, now};
pub use wasmco_core::wire::{
    AppDependency, ClusterHealth, Connectivity, DeployState, Deployed, Drift, DriftKind,
    Reachability, Readiness, ResourceStatus, StateAction,
};

/// Per cluster, the kinds (`apiVersion`, `kind`) a DIG's revisions put
/// objects of there: where rsync looks for what it has to remove.
pub type Footprint = BTreeMap<ClusterRef, BTreeSet<(String, String)>>;

/// The condition a write is made under, when several hosts share the
/// store: the writer still holds the target's action lock (or owns its
/// reconcile). A host whose lease ran out while it was stopped then
/// writes nothing over what the next holder wrote. `None` for a host
/// alone on its store.
pub type Fence<'a> = Option<&'a Expect>;

/// What a context was made from, and in what order rsync deploys it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextMeta {
    /// Project.
    pub project: String,
    /// Composite app.
    pub composite_app: String,
    /// Composite app version.
    pub composite_app_version: String,
    /// Deployment intent group.
    pub deployment_intent_group: String,
    /// The DIG's `spec.version` (EMCO's release).
    pub release: String,
    /// This context's revision.
    pub revision: u64,
    /// When it was made.
    pub created: String,
    /// Apps in deployment order (dependencies first).
    pub app_order: Vec<String>,
    /// Per app, the apps it waits for.
    pub dependencies: BTreeMap<String, Vec<AppDependency>>,
    /// As whom, and into which namespace, its objects are applied.
    #[serde(default)]
    pub access: Access,
    /// The DIG (its key) whose objects this context takes over: EMCO's
    /// migrate, from one composite app version to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopt_from: Option<String>,
    /// Per cluster provider, the tenancy rules its objects were checked
    /// against, which rsync holds them to again where it learns a kind's
    /// real scope; absent for what the admin deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<BTreeMap<String, wasmco_core::tenancy::Confinement>>,
    /// Services of its apps to make known on the clusters of other apps
    /// once they are deployed (EMCO's dtc service discovery).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_mirrors: Vec<ServiceMirror>,
}

/// A server app's Service, made known to client apps on other clusters:
/// once the server is ready, each client cluster gets a Service of that
/// name without a selector and its Endpoints, pointing at the address the
/// server's clusters expose it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMirror {
    /// Where it was asked for, for messages (an inbound intent, say).
    pub origin: String,
    /// The app whose Service it is.
    pub server_app: String,
    /// The Service's name.
    pub service: String,
    /// The apps whose clusters get it.
    pub client_apps: Vec<String>,
}

/// How rsync reaches the clusters for one context: with their own
/// kubeconfigs, or (a DIG in a standard logical cloud) with that cloud's
/// user's, and the namespace objects that name none go into.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// The namespace of objects that name none; empty means `default`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The standard logical cloud (of the context's project) whose user's
    /// kubeconfig on each cluster is used instead of the cluster's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_user: Option<String>,
}

impl Access {
    /// The namespace of objects that name none.
    pub fn namespace(&self) -> &str {
        if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }
}

/// One cluster of an app in a stored context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPlacement {
    /// The cluster (stored as EMCO's `provider+cluster`).
    pub cluster: ClusterRef,
    /// The anyOf group it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// How a cluster's resource differs from its app's base, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum StoredOverride {
    Set(serde_json::Value),
    Removed,
}

/// An app of a stored context.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredApp {
    /// Its name.
    pub name: String,
    /// The manifests every cluster gets, CRDs first.
    pub base: Vec<Resource>,
    /// Its clusters.
    pub placement: Vec<StoredPlacement>,
    /// Per cluster, the resources that differ from `base`.
    pub diffs: BTreeMap<ClusterRef, Vec<(ResourceKey, Option<Resource>)>>,
    /// Its Helm hooks, by weight: every cluster of the app runs them.
    pub hooks: Vec<Hook>,
}

impl StoredApp {
    /// An app of nothing but `per_cluster`: placed on each of those
    /// clusters with those resources. What every cluster gets alike is
    /// kept once, as the base; a cluster keeps only the rest.
    pub fn spread(name: &str, per_cluster: Vec<(ClusterRef, Vec<Resource>)>) -> Self {
        let placement = per_cluster
            .iter()
            .map(|(cluster, _)| StoredPlacement {
                cluster: cluster.clone(),
                group: None,
            })
            .collect();
        let base: Vec<Resource> = match per_cluster.split_first() {
            Some(((_, first), others)) => first
                .iter()
                .filter(|r| others.iter().all(|(_, theirs)| theirs.contains(r)))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        let diffs = per_cluster
            .into_iter()
            .filter_map(|(cluster, resources)| {
                let diff: Vec<_> = resources
                    .into_iter()
                    .filter(|r| !base.contains(r))
                    .map(|r| (r.key.clone(), Some(r)))
                    .collect();
                (!diff.is_empty()).then_some((cluster, diff))
            })
            .collect();
        StoredApp {
            name: name.to_owned(),
            base,
            placement,
            diffs,
            hooks: Vec::new(),
        }
    }

    /// The manifests `cluster` gets.
    pub fn resources_on(&self, cluster: &ClusterRef) -> Vec<&Resource> {
        let Some(diff) = self.diffs.get(cluster) else {
            return self.base.iter().collect();
        };
        let lookup = |key: &ResourceKey| diff.iter().find(|(k, _)| k == key).map(|(_, r)| r);
        let mut out: Vec<&Resource> = self
            .base
            .iter()
            .filter_map(|base| match lookup(&base.key) {
                None => Some(base),
                Some(changed) => changed.as_ref(),
            })
            .collect();
        out.extend(diff.iter().filter_map(|(key, r)| match r {
            Some(added) if !self.base.iter().any(|b| &b.key == key) => Some(added),
            _ => None,
        }));
        out
    }
}

/// A whole stored context.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredContext {
    /// Its inputs and order.
    pub meta: ContextMeta,
    /// Its apps in app order.
    pub apps: Vec<StoredApp>,
}

/// The context store failed or holds something it cannot read.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored value is not what this version wrote.
    #[error("stored context data at {key} is unreadable: {reason}")]
    Corrupt {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// The revision is not kept.
    #[error("revision {0} is not kept")]
    NoRevision(u64),
    /// This host no longer holds the lock (or the ownership) the write was
    /// made under: another host has the work now, and nothing was written.
    #[error(
        "this host lost its hold on {0} (its lease ran out); another host has it now, and nothing was written"
    )]
    Fenced(String),
}

/// AppContexts and DIG states over a [`KvStore`].
#[derive(Clone)]
pub struct ContextStore {
    store: Arc<dyn KvStore>,
}

/// CRDs go first so the objects that use them can be applied (and
/// namespaces before what lives in them); removal goes the other way.
pub fn kind_rank(resource: &Resource) -> u8 {
    match resource.key.kind.as_str() {
        "CustomResourceDefinition" => 0,
        "Namespace" => 1,
        _ => 2,
    }
}

impl ContextStore {
    /// The context store over `store`.
    pub fn new(store: Arc<dyn KvStore>) -> Self {
        ContextStore { store }
    }

    fn get_json<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Result<Option<T>, ContextError> {
        match self.store.get(key.as_bytes())? {
            None => Ok(None),
            Some(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| ContextError::Corrupt {
                        key: key.to_owned(),
                        reason: e.to_string(),
                    })
            }
        }
    }

    /// The DIG's state; `Created` when nothing was done to it.
    pub fn state(&self, dig: &str) -> Result<DigState, ContextError> {
        Ok(self
            .get_json(&format!("ctx/{dig}/state"))?
            .unwrap_or_else(DigState::created))
    }

    /// The write that stores `state` (to batch with a context).
    pub fn state_op(dig: &str, state: &DigState) -> BatchOp {
        BatchOp::Put(
            format!("ctx/{dig}/state").into_bytes(),
            serde_json::to_vec(state).unwrap_or_default(),
        )
    }

    /// Writes `ops`, but only while `fence` holds (see [`Fence`]); `lazy`
    /// when the write may wait for the disk.
    fn commit(
        &self,
        dig: &str,
        ops: Vec<BatchOp>,
        fence: Fence<'_>,
        lazy: bool,
    ) -> Result<(), ContextError> {
        match fence {
            None if lazy => Ok(self.store.batch_lazy(ops)?),
            None => Ok(self.store.batch(ops)?),
            Some(fence) => {
                if self.store.batch_if(vec![fence.clone()], ops)? {
                    Ok(())
                } else {
                    Err(ContextError::Fenced(dig.to_owned()))
                }
            }
        }
    }

    /// Stores `state` alone.
    pub fn put_state(
        &self,
        dig: &str,
        state: &DigState,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        self.commit(dig, vec![Self::state_op(dig, state)], fence, false)
    }

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
            let app_prefix = format!("{prefix}/app/{}", app.name);
            let mut base: Vec<&Resource> = app.base.iter().collect();
            base.sort_by_key(|r| kind_rank(r));
            let manifests: Vec<&serde_json::Value> = base.iter().map(|r| &r.manifest).collect();
            ops.push(BatchOp::Put(
                format!("{app_prefix}/base").into_bytes(),
                json(&manifests),
            ));
            ops.push(BatchOp::Put(
                format!("{app_prefix}/placement").into_bytes(),
                json(&app.placement),
            ));
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
        }
        let mut footprint = self.footprint(dig)?;
        add_to_footprint(&mut footprint, apps);
        ops.push(BatchOp::Put(
            format!("ctx/{dig}/footprint").into_bytes(),
            json(&footprint),
        ));
        ops.push(Self::state_op(dig, state));
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

    /// Takes `name` of `space` (a namespace of the clusters, say) for
    /// `holder`, unless another holds it: that one's name then. Taken at
    /// most once, whichever host asks first.
    pub fn hold(
        &self,
        space: &str,
        name: &str,
        holder: &str,
    ) -> Result<Option<String>, ContextError> {
        let key = format!("held/{space}/{name}").into_bytes();
        loop {
            match self.store.get(&key)? {
                Some(current) if current == holder.as_bytes() => return Ok(None),
                Some(current) => return Ok(Some(String::from_utf8_lossy(&current).into_owned())),
                None => {
                    let taken = self.store.batch_if(
                        vec![Expect::Absent(key.clone())],
                        vec![BatchOp::Put(key.clone(), holder.as_bytes().to_vec())],
                    )?;
                    if taken {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Gives `name` of `space` back, if `holder` holds it.
    pub fn let_go(&self, space: &str, name: &str, holder: &str) -> Result<(), ContextError> {
        let key = format!("held/{space}/{name}").into_bytes();
        self.store.batch_if(
            vec![Expect::Value(key.clone(), holder.as_bytes().to_vec())],
            vec![BatchOp::Delete(key)],
        )?;
        Ok(())
    }

    /// Every name of `space` `holder` holds.
    pub fn held_by(&self, space: &str, holder: &str) -> Result<Vec<String>, ContextError> {
        let prefix = format!("held/{space}/");
        Ok(self
            .store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .filter(|(_, value)| value == holder.as_bytes())
            .map(|(key, _)| String::from_utf8_lossy(&key[prefix.len()..]).into_owned())
            .collect())
    }

    /// Every cluster and kind the DIG's revisions put objects on. DIGs
    /// stored before the footprint was kept get theirs from every kept
    /// revision.
    pub fn footprint(&self, dig: &str) -> Result<Footprint, ContextError> {
        if let Some(footprint) = self.get_json(&format!("ctx/{dig}/footprint"))? {
            return Ok(footprint);
        }
        let mut footprint = Footprint::new();
        for revision in 1..=self.state(dig)?.latest {
            match self.read(dig, revision) {
                Ok(context) => add_to_footprint(&mut footprint, &context.apps),
                Err(ContextError::NoRevision(_)) => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(footprint)
    }

    /// Records what the probe saw of `cluster`.
    pub fn put_health(
        &self,
        cluster: &ClusterRef,
        health: &ClusterHealth,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        let key = format!("health/{cluster}");
        self.commit(
            &key,
            vec![BatchOp::Put(key.clone().into_bytes(), json(health))],
            fence,
            true,
        )
    }

    /// What the probe last saw of `cluster`; `None` before its first probe.
    pub fn health(&self, cluster: &ClusterRef) -> Result<Option<ClusterHealth>, ContextError> {
        self.get_json(&format!("health/{cluster}"))
    }

    /// Every cluster's recorded health, with the cluster it is for, in one
    /// scan.
    pub fn healths(&self) -> Result<Vec<(ClusterRef, ClusterHealth)>, ContextError> {
        let mut healths = Vec::new();
        self.store.visit_prefix(b"health/", &mut |key, value| {
            let cluster = std::str::from_utf8(&key[b"health/".len()..])
                .ok()
                .and_then(ClusterRef::parse);
            match (cluster, serde_json::from_slice(value)) {
                (Some(cluster), Ok(health)) => healths.push((cluster, health)),
                (None, _) => tracing::warn!(
                    key = %String::from_utf8_lossy(key), "cluster health under an unreadable key skipped"
                ),
                (_, Err(error)) => tracing::warn!(
                    key = %String::from_utf8_lossy(key), %error, "unreadable cluster health skipped"
                ),
            }
        })?;
        Ok(healths)
    }

    /// Forgets a deleted cluster's health.
    pub fn forget_health(&self, cluster: &ClusterRef) -> Result<(), ContextError> {
        Ok(self.store.batch(vec![BatchOp::Delete(
            format!("health/{cluster}").into_bytes(),
        )])?)
    }

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

    /// Reads revision `revision` of the DIG's context.
    pub fn read(&self, dig: &str, revision: u64) -> Result<StoredContext, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}");
        let meta: ContextMeta = self
            .get_json(&format!("{prefix}/meta"))?
            .ok_or(ContextError::NoRevision(revision))?;
        let corrupt = |key: &str, reason: String| ContextError::Corrupt {
            key: key.to_owned(),
            reason,
        };
        let mut apps = Vec::with_capacity(meta.app_order.len());
        for name in &meta.app_order {
            let app_prefix = format!("{prefix}/app/{name}");
            let manifests: Vec<serde_json::Value> = self
                .get_json(&format!("{app_prefix}/base"))?
                .unwrap_or_default();
            let base = manifests
                .into_iter()
                .map(|m| {
                    Resource::from_manifest(m).map_err(|e| corrupt(&app_prefix, e.to_string()))
                })
                .collect::<Result<_, _>>()?;
            let placement = self
                .get_json(&format!("{app_prefix}/placement"))?
                .unwrap_or_default();
            let mut diffs = BTreeMap::new();
            let diff_prefix = format!("{app_prefix}/diff/");
            for (key, bytes) in self.store.scan_prefix(diff_prefix.as_bytes())? {
                let key = String::from_utf8_lossy(&key).into_owned();
                let stored: Vec<(ResourceKey, StoredOverride)> =
                    serde_json::from_slice(&bytes).map_err(|e| corrupt(&key, e.to_string()))?;
                let diff = stored
                    .into_iter()
                    .map(|(k, o)| match o {
                        StoredOverride::Set(m) => Resource::from_manifest(m)
                            .map(|r| (k, Some(r)))
                            .map_err(|e| corrupt(&key, e.to_string())),
                        StoredOverride::Removed => Ok((k, None)),
                    })
                    .collect::<Result<_, _>>()?;
                let cluster = ClusterRef::parse(&key[diff_prefix.len()..])
                    .ok_or_else(|| corrupt(&key, "not a provider+cluster key".into()))?;
                diffs.insert(cluster, diff);
            }
            let hooks: Vec<StoredHook> = self
                .get_json(&format!("{app_prefix}/hooks"))?
                .unwrap_or_default();
            let hooks = hooks
                .into_iter()
                .map(|h| Hook::try_from(h).map_err(|e| corrupt(&app_prefix, e.to_string())))
                .collect::<Result<_, _>>()?;
            apps.push(StoredApp {
                name: name.clone(),
                base,
                placement,
                diffs,
                hooks,
            });
        }
        Ok(StoredContext { meta, apps })
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
    ) -> Result<std::collections::HashMap<String, ResourceStatus>, ContextError> {
        let prefix = format!("ctx/{dig}/rev/{revision:010}/status/{app}/{cluster}/");
        self.store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .map(|(key, value)| {
                let key = String::from_utf8_lossy(&key).into_owned();
                let status = serde_json::from_slice(&value).map_err(|e| ContextError::Corrupt {
                    key: key.clone(),
                    reason: e.to_string(),
                })?;
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
            let status = serde_json::from_slice(&value).map_err(|e| ContextError::Corrupt {
                key: key.clone(),
                reason: e.to_string(),
            })?;
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
                    _ => Err(ContextError::Corrupt {
                        reason: format!(
                            "{:?} is not a connectivity",
                            String::from_utf8_lossy(&value)
                        ),
                        key,
                    }),
                }
            })
            .collect()
    }

    /// What a step after the deploy left to say about `dig` (why it could
    /// not be done); `None` when it was done or has nothing to say.
    pub fn note(&self, dig: &str) -> Result<Option<String>, ContextError> {
        self.get_json(&format!("ctx/{dig}/note"))
    }

    /// Records (or, with `None`, clears) [`Self::note`], unless it is so.
    pub fn put_note(&self, dig: &str, note: Option<&str>) -> Result<(), ContextError> {
        if self.note(dig)?.as_deref() == note {
            return Ok(());
        }
        let key = format!("ctx/{dig}/note").into_bytes();
        Ok(self.store.batch(vec![match note {
            Some(note) => BatchOp::Put(key, json(note)),
            None => BatchOp::Delete(key),
        }])?)
    }

    /// Every DIG with a state, and that state.
    pub fn states(&self) -> Result<Vec<(String, DigState)>, ContextError> {
        let mut states = Vec::new();
        self.store.visit_prefix(b"ctx/", &mut |key, value| {
            let key = String::from_utf8_lossy(key);
            if let Some(dig) = key
                .strip_prefix("ctx/")
                .and_then(|k| k.strip_suffix("/state"))
                && let Ok(state) = serde_json::from_slice(value)
            {
                states.push((dig.to_owned(), state));
            }
        })?;
        Ok(states)
    }

    /// Removes everything stored for the DIG (its contexts and state); on
    /// a store that takes fewer changes at once, the state goes last, so
    /// an interrupted removal can be done again.
    pub fn forget(&self, dig: &str) -> Result<(), ContextError> {
        let state = format!("ctx/{dig}/state").into_bytes();
        let mut ops: Vec<BatchOp> = self
            .store
            .scan_prefix(format!("ctx/{dig}/").as_bytes())?
            .into_iter()
            .filter(|(key, _)| *key != state)
            .map(|(key, _)| BatchOp::Delete(key))
            .collect();
        ops.push(BatchOp::Delete(state));
        let most = self.store.max_batch();
        if ops.len() <= most {
            return Ok(self.store.batch(ops)?);
        }
        let last = ops.split_off(ops.len() - 1);
        for chunk in ops.chunks(most).chain([last.as_slice()]) {
            self.store.batch(chunk.to_vec())?;
        }
        Ok(())
    }

    /// Keys stored for the DIG (for tests and size reports).
    pub fn key_count(&self, dig: &str) -> Result<usize, ContextError> {
        let mut count = 0;
        self.store
            .visit_prefix(format!("ctx/{dig}/").as_bytes(), &mut |_, _| count += 1)?;
        Ok(count)
    }
}

fn add_to_footprint(footprint: &mut Footprint, apps: &[StoredApp]) {
    for app in apps {
        for placement in &app.placement {
            let kinds = footprint.entry(placement.cluster.clone()).or_default();
            for resource in app.resources_on(&placement.cluster) {
                kinds.insert((resource.api_version.clone(), resource.key.kind.clone()));
            }
        }
    }
}

/// Our own plain data types serialise without fail.
fn json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
