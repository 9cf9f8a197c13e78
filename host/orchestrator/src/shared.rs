//! What every concern of the orchestrator works over: the resource
//! database, the context store, the sync engine and one lock per target;
//! and the moves every target's lifecycle makes with them (lock and read
//! its state, check a transition, stop or terminate it).
//!
//! DIGs, logical clouds, network sets and caCerts each keep their own
//! rules in their own module and reach the store only through this.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmco_core::wire::Lifecycle;
use wasmco_store::appcontext::{
    self as stored, Access, ContextError, ContextMeta, ContextStore, DeployState, DigState,
    SyncEngine,
};
use wasmco_store::db::{ResourceDb, ResourceId};

use wasmco_core::resource::Resource;
use wasmco_runtime::contract::{PlaceApp, PlacementEdit};

use crate::draft::{AppDraft, ClusterInfo, DraftContext};
use crate::error::OrchestratorError;
use crate::locks::{TargetGuard, TargetLocks};

/// The stores and the sync engine every target's lifecycle works over;
/// cheap to clone (clones share them).
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) db: ResourceDb,
    pub(crate) contexts: ContextStore,
    pub(crate) sync: Arc<dyn SyncEngine>,
    /// One action per target at a time: an action reads, computes and
    /// writes its target's state.
    pub(crate) actions: Arc<TargetLocks>,
}

impl Shared {
    /// Waits for `key`'s action lock.
    pub(crate) fn lock(&self, key: &str) -> Result<TargetGuard, OrchestratorError> {
        Ok(self.actions.lock(key).map_err(ContextError::from)?)
    }

    /// Locks the context under `key` for an action on `id` (a DIG, a
    /// logical cloud, a cluster's networks), which must exist, and reads
    /// its state.
    pub(crate) fn begin_at(
        &self,
        key: &str,
        id: &ResourceId,
    ) -> Result<(TargetGuard, DigState), OrchestratorError> {
        let guard = self.lock(key)?;
        self.db.get(id)?;
        let state = self.contexts.state(key)?;
        Ok((guard, state))
    }

    /// A stop or a terminate (`action`, by its table) of what is stored
    /// under `key` (a DIG's, a logical cloud's or a network set's context):
    /// the state changes and rsync is told; it ends or undoes what it
    /// did. The caller holds the action lock.
    pub(crate) fn mark(
        &self,
        action: impl Lifecycle,
        target: &str,
        key: &str,
        state: DigState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        self.mark_because(action, target, key, state, guard, None)
    }

    /// [`Self::mark`], with `reason` in the history.
    pub(crate) fn mark_because(
        &self,
        action: impl Lifecycle,
        target: &str,
        key: &str,
        mut state: DigState,
        guard: &TargetGuard,
        reason: Option<String>,
    ) -> Result<DigState, OrchestratorError> {
        let next = allow(target, &state, action)?;
        let revision = state.revision;
        state.enter_because(next, revision, reason);
        self.contexts.put_state(key, &state, guard.fence())?;
        self.sync.changed(key);
        Ok(state)
    }
}

/// A one-app context the host makes for itself, placed on one cluster: a
/// cluster's network intents, its addons.
pub(crate) struct OnCluster<'a> {
    /// Its key in the context store.
    pub(crate) key: &'a str,
    /// Its composite app (`_` first: no real one's).
    pub(crate) composite_app: &'a str,
    /// Its one app.
    pub(crate) app: &'a str,
    /// The cluster's provider.
    pub(crate) provider: &'a str,
    /// The cluster.
    pub(crate) cluster: &'a str,
}

impl Shared {
    /// Writes `resources` as `on`'s next revision, in state `next`, and
    /// tells rsync. The caller holds the context's action lock (`guard`).
    pub(crate) fn write_on_cluster(
        &self,
        on: &OnCluster<'_>,
        resources: Vec<Resource>,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let cluster = ClusterInfo {
            provider: on.provider.to_owned(),
            name: on.cluster.to_owned(),
            labels: Vec::new(),
            kv: Vec::new(),
        };
        let mut draft = DraftContext::new(vec![AppDraft::new(on.app, resources)], vec![cluster]);
        let here = PlacementEdit::Place(PlaceApp {
            app: on.app.to_owned(),
            clusters: vec![0],
            group: None,
        });
        draft
            .apply_placement(&[here])
            .map_err(|e| OrchestratorError::Input(e.reason))?;
        draft.settle_placement();
        let revision = state.latest + 1;
        let meta = own_meta(
            on.provider,
            on.composite_app,
            on.cluster,
            revision,
            vec![on.app.to_owned()],
        );
        state.enter(next, revision);
        self.contexts
            .write(on.key, &meta, &draft.into_stored(), &state, guard.fence())?;
        self.sync.changed(on.key);
        Ok(state)
    }
}

/// The state `action` leads `target` to from `state`, or the refusal its
/// transition table gives.
pub(crate) fn allow(
    target: &str,
    state: &DigState,
    action: impl Lifecycle,
) -> Result<DeployState, OrchestratorError> {
    state
        .state
        .after(action)
        .map_err(|refused| OrchestratorError::State {
            target: target.to_owned(),
            refused,
        })
}

/// The meta of a context the host makes for itself (a logical cloud's, a
/// network set's, a caCert stage's): its apps in `app_order`, made with
/// the cluster's own rights, since what it makes (namespaces, roles,
/// cluster-wide objects) needs them.
pub(crate) fn own_meta(
    owner: &str,
    composite_app: &str,
    name: &str,
    revision: u64,
    app_order: Vec<String>,
) -> ContextMeta {
    ContextMeta {
        project: owner.to_owned(),
        composite_app: composite_app.to_owned(),
        composite_app_version: String::new(),
        deployment_intent_group: name.to_owned(),
        release: String::new(),
        revision,
        created: stored::now(),
        app_order,
        dependencies: BTreeMap::new(),
        access: Access::default(),
        adopt_from: None,
        confinement: None,
        service_mirrors: Vec::new(),
        failover: None,
        rollout: None,
    }
}
