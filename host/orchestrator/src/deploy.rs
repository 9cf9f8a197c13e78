//! A DIG's lifecycle: approve, instantiate, update, rollback, terminate.
//!
//! Each action checks the DIG's state first (EMCO's states: Created ->
//! Approved -> Instantiated -> Updated | Terminated); instantiate and update
//! build a new AppContext revision and store it with the new state in one
//! batch, so a failed controller leaves no context and no state change.
//! Finished contexts go to the sync engine through [`SyncEngine`].

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmco_core::wire::{DigAction, Lifecycle, MigrateTo};
use wasmco_core::{ClusterRef, Kind};
use wasmco_runtime::helm::HelmRenderer;
use wasmco_runtime::{Controller, ControllerKind};
use wasmco_store::appcontext::{
    self as stored, Access, ClusterHealth, Connectivity, ContextError, ContextMeta, ContextStore,
    DeployState, DigState, ResourceStatus, StoredContext, SyncEngine,
};
use wasmco_store::db::{ResourceDb, ResourceId};

use super::dig::{DigRef, OrchestratorError};
use super::inputs::{self, Inputs};
use super::locks::{TargetGuard, TargetLocks};
use super::pipeline::{Step, run_controllers};
use super::registry::ControllerRegistry;
use super::service_discovery::Follow;
use super::tenancy::Actor;
use crate::draft::DraftContext;

/// A context and what rsync recorded for it.
#[derive(Debug, Clone)]
pub struct SyncedContext {
    /// The context.
    pub context: StoredContext,
    /// (app, cluster, `name+Kind`) → status.
    pub statuses: BTreeMap<(String, ClusterRef, String), ResourceStatus>,
    /// Whether rsync reaches each cluster.
    pub connectivity: BTreeMap<ClusterRef, Connectivity>,
    /// Why services the DIG asks to make known to their clients are not
    /// (yet): see [`crate::service_discovery`].
    pub service_discovery: Option<String>,
}

/// DIG actions over the resource database and the context store.
#[derive(Clone)]
pub struct Orchestrator {
    pub(super) db: ResourceDb,
    pub(super) contexts: ContextStore,
    registry: ControllerRegistry,
    generic: Arc<Controller>,
    /// Renders the apps that are Helm charts.
    helm: HelmRenderer,
    pub(super) sync: Arc<dyn SyncEngine>,
    /// What a cluster's kubeconfig may ask of this host.
    pub(super) kubeconfigs: Arc<wasmco_pki::kubeconfig::KubeconfigPolicy>,
    /// One action per DIG or logical cloud at a time: an action reads,
    /// computes and writes its target's state.
    pub(super) actions: Arc<TargetLocks>,
    /// How long each stage of an instantiate or update takes.
    metrics: crate::metrics::OrchestratorMetrics,
    /// The intent kinds the stored controllers declare.
    intents: Arc<crate::intents::IntentCatalog>,
}

impl Orchestrator {
    /// An orchestrator calling `generic` for generic placement intents.
    pub fn new(
        db: ResourceDb,
        contexts: ContextStore,
        registry: ControllerRegistry,
        generic: Arc<Controller>,
        helm: HelmRenderer,
        sync: Arc<dyn SyncEngine>,
        kubeconfigs: Arc<wasmco_pki::kubeconfig::KubeconfigPolicy>,
    ) -> Self {
        Orchestrator {
            db,
            contexts,
            registry,
            generic,
            helm,
            sync,
            kubeconfigs,
            actions: Arc::default(),
            metrics: crate::metrics::OrchestratorMetrics::default(),
            intents: Arc::default(),
        }
    }

    /// The lock a controller's upload holds from checking its declared
    /// kinds against the stored controllers' until it is stored: two
    /// uploads at once, on this host or another, would otherwise both pass
    /// the check with other kinds at one segment.
    pub fn lock_declarations(&self) -> Result<crate::DeclarationLock, OrchestratorError> {
        // `_` starts no project's name, so no DIG's or cloud's key.
        let guard = self
            .actions
            .lock("_controllers/declarations")
            .map_err(ContextError::from)?;
        Ok(crate::DeclarationLock { _guard: guard })
    }

    /// The intent kinds the stored controllers declare, as stored now.
    pub fn intent_catalog(
        &self,
    ) -> Result<Arc<crate::intents::Catalog>, wasmco_store::db::DbError> {
        self.intents.current(&self.db)
    }

    /// How long instantiates and updates take, for `/metrics`.
    pub fn metrics(&self) -> &crate::metrics::OrchestratorMetrics {
        &self.metrics
    }

    /// Serialises each target's actions across `hosts` too, not only
    /// within this process.
    pub fn with_hosts(mut self, hosts: Arc<dyn wasmco_store::hosts::HostGroup>) -> Self {
        self.actions = Arc::new(TargetLocks::across(hosts));
        self
    }

    fn begin(&self, dig: &DigRef) -> Result<(TargetGuard, DigState), OrchestratorError> {
        self.begin_at(&dig.key(), &dig.id())
    }

    /// Locks the context under `key` for an action on `id` (a DIG, a
    /// logical cloud, a cluster's networks), which must exist, and reads
    /// its state.
    pub(super) fn begin_at(
        &self,
        key: &str,
        id: &ResourceId,
    ) -> Result<(TargetGuard, DigState), OrchestratorError> {
        let guard = self.actions.lock(key).map_err(ContextError::from)?;
        self.db.get(id)?;
        let state = self.contexts.state(key)?;
        Ok((guard, state))
    }

    /// The state `action` leads `target` to from `state`, or the refusal
    /// its transition table gives.
    pub(super) fn allow(
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

    /// Each target being synced and the id of the host syncing it.
    pub fn sync_work(&self) -> std::collections::BTreeMap<String, String> {
        self.sync.work()
    }

    /// The Helm renderer apps that are charts are rendered with.
    pub fn helm(&self) -> &HelmRenderer {
        &self.helm
    }

    /// The DIG's state and history.
    pub fn state(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.db.get(&dig.id())?;
        Ok(self.contexts.state(&dig.key())?)
    }

    /// Created -> Approved.
    pub fn approve(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        let (guard, mut state) = self.begin(dig)?;
        let next = Self::allow(&dig.describe(), &state, DigAction::Approve)?;
        let revision = state.revision;
        state.enter(next, revision);
        self.contexts.put_state(&dig.key(), &state, guard.fence())?;
        Ok(state)
    }

    /// Approved, Terminated or TerminateStopped -> Instantiated, with a new
    /// context; `actor`'s tenancy rules checked on it.
    pub fn instantiate(&self, dig: &DigRef, actor: Actor) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let next = Self::allow(&dig.describe(), &state, DigAction::Instantiate)?;
        self.build(dig, state, next, None, actor, &guard)
    }

    /// Instantiated or Updated -> Updated, with a new context from the current inputs.
    pub fn update(&self, dig: &DigRef, actor: Actor) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let next = Self::allow(&dig.describe(), &state, DigAction::Update)?;
        self.build(dig, state, next, None, actor, &guard)
    }

    /// EMCO's migrate: the deployed DIG's objects move to `target_dig` of
    /// version `target_version` of the same composite app (Approved), as
    /// one update. The target is instantiated and takes the source's
    /// objects over in place; the source is Terminated, and what the
    /// target does not take is removed once the target holds the rest.
    pub fn migrate(
        &self,
        source: &DigRef,
        target_version: &str,
        target_dig: &str,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        let target = DigRef {
            version: target_version.to_owned(),
            name: target_dig.to_owned(),
            ..source.clone()
        };
        if target == *source {
            return Err(OrchestratorError::Input(
                "a DIG cannot migrate to itself; name another version's DIG".into(),
            ));
        }
        // Both locked, in one order, so two crossing migrates cannot deadlock.
        let (first, second) = if source.key() < target.key() {
            (source, &target)
        } else {
            (&target, source)
        };
        let first_guard = self
            .actions
            .lock(&first.key())
            .map_err(ContextError::from)?;
        let second_guard = self
            .actions
            .lock(&second.key())
            .map_err(ContextError::from)?;
        let (source_guard, target_guard) = if source.key() < target.key() {
            (&first_guard, &second_guard)
        } else {
            (&second_guard, &first_guard)
        };
        self.db.get(&source.id())?;
        let mut source_state = self.contexts.state(&source.key())?;
        let source_next = Self::allow(&source.describe(), &source_state, DigAction::Migrate)?;
        match self.db.get(&target.id()) {
            Ok(_) => {}
            Err(wasmco_store::db::DbError::NotFound(_)) => {
                return Err(OrchestratorError::Input(format!(
                    "spec names {}, which does not exist; create and approve it first",
                    target.describe()
                )));
            }
            Err(error) => return Err(error.into()),
        }
        let target_state = self.contexts.state(&target.key())?;
        let target_next = Self::allow(&target.describe(), &target_state, MigrateTo)?;
        let target_state = self.build(
            &target,
            target_state,
            target_next,
            Some(source.key()),
            actor,
            target_guard,
        )?;
        let revision = source_state.revision;
        source_state.enter(source_next, revision);
        source_state.handed_over_to = Some(target.key());
        self.contexts
            .put_state(&source.key(), &source_state, source_guard.fence())?;
        self.sync.changed(&source.key());
        self.mirror_follows(source, Follow::Terminate, source_guard)?;
        Ok(target_state)
    }

    /// Instantiated or Updated -> Updated, back to a kept revision, which
    /// `actor`'s tenancy rules must allow as they are now.
    pub fn rollback(
        &self,
        dig: &DigRef,
        revision: u64,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, mut state) = self.begin(dig)?;
        let next = Self::allow(&dig.describe(), &state, DigAction::Rollback)?;
        let mut kept = self.contexts.read(&dig.key(), revision)?;
        state.enter(next, revision);
        if actor == Actor::Tenant {
            // Held to today's rules, not to those it was built under (or
            // to none, when the admin built it).
            let rules = self.confine(&dig.project, &kept.meta.access, &kept.apps)?;
            kept.meta.confinement = Some(rules);
            self.contexts
                .put_meta(&dig.key(), &kept.meta, &state, guard.fence())?;
        } else {
            self.contexts.put_state(&dig.key(), &state, guard.fence())?;
        }
        self.sync.changed(&dig.key());
        if kept.meta.service_mirrors.is_empty() {
            self.mirror_follows(dig, Follow::Terminate, &guard)?;
        }
        Ok(state)
    }

    /// Tells rsync to stop working on the DIG, as EMCO's `stop` does:
    /// Instantiated or Updated -> InstantiateStopped, Terminated ->
    /// TerminateStopped. Nothing more is applied or deleted until the next
    /// action (terminate, or instantiate after a stopped terminate).
    pub fn stop(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let state = self.mark(DigAction::Stop, &dig.describe(), &dig.key(), state, &guard)?;
        self.mirror_follows(dig, Follow::Stop, &guard)?;
        Ok(state)
    }

    /// Instantiated, Updated or InstantiateStopped -> Terminated; the
    /// context is marked for removal.
    pub fn terminate(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let state = self.mark(
            DigAction::Terminate,
            &dig.describe(),
            &dig.key(),
            state,
            &guard,
        )?;
        self.mirror_follows(dig, Follow::Terminate, &guard)?;
        Ok(state)
    }

    /// A stop or a terminate (`action`, by its table) of what is stored
    /// under `key` (a DIG's, a logical cloud's or a network set's context):
    /// the state changes and rsync is told; it ends or undoes what it
    /// did. The caller holds the action lock.
    pub(super) fn mark(
        &self,
        action: impl Lifecycle,
        target: &str,
        key: &str,
        mut state: DigState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let next = Self::allow(target, &state, action)?;
        let revision = state.revision;
        state.enter(next, revision);
        self.contexts.put_state(key, &state, guard.fence())?;
        self.sync.changed(key);
        Ok(state)
    }

    /// The current context (or revision `revision`).
    pub fn context(
        &self,
        dig: &DigRef,
        revision: Option<u64>,
    ) -> Result<(DigState, StoredContext), OrchestratorError> {
        let state = self.state(dig)?;
        let revision = revision.unwrap_or(state.revision);
        if revision == 0 {
            return Err(OrchestratorError::Input(format!(
                "deployment intent group {} has no context yet (it is {})",
                dig.key(),
                state.state
            )));
        }
        let context = self.contexts.read(&dig.key(), revision)?;
        Ok((state, context))
    }

    /// Where the DIG deploys: the logical cloud its `spec.logicalCloud`
    /// names, which must exist and be instantiated, gives the namespace,
    /// the clusters placement may choose from and, for a standard cloud,
    /// the user rsync applies as. Without one: every cluster, `default`,
    /// the clusters' own kubeconfigs.
    fn deployment_scope(&self, dig: &DigRef) -> Result<inputs::Scope, OrchestratorError> {
        let spec: wasmco_core::specs::DigSpec = self.db.spec(&dig.id())?;
        let Some(cloud) = spec.logical_cloud.filter(|c| !c.is_empty()) else {
            return Ok(inputs::Scope::default());
        };
        let lc = crate::logical_cloud::LogicalCloudRef {
            project: dig.project.clone(),
            name: cloud.clone(),
        };
        let cloud_spec: wasmco_core::specs::LogicalCloudSpec = match self.db.spec(&lc.id()) {
            Ok(spec) => spec,
            Err(wasmco_store::db::DbError::NotFound(_)) => {
                return Err(OrchestratorError::Input(format!(
                    "spec.logicalCloud names logical cloud {cloud}, which project {} does not have; \
                     create it (an admin cloud is spec: {{level: \"0\"}}) and instantiate it",
                    dig.project
                )));
            }
            Err(error) => return Err(error.into()),
        };
        let state = self.contexts.state(&lc.key())?;
        if !state.state.is_deployed() {
            return Err(OrchestratorError::Input(format!(
                "spec.logicalCloud names logical cloud {cloud}, which is {}; instantiate it first",
                state.state
            )));
        }
        let clusters = self
            .logical_cloud_clusters(&lc)?
            .into_iter()
            .map(|(_, reference)| ClusterRef::new(&reference.cluster_provider, &reference.cluster))
            .collect();
        let admin = cloud_spec.is_admin();
        let cloud_labels = cloud_spec.labels.clone();
        // A standard cloud's namespace as its context made it (and as it
        // was checked then), not as its spec may say since.
        let namespace = match admin {
            true => cloud_spec.namespace,
            false => self.cloud_namespace(&lc)?.unwrap_or(cloud_spec.namespace),
        };
        Ok(inputs::Scope {
            access: Access {
                namespace,
                cloud_user: (!admin).then_some(cloud),
            },
            clusters: Some(clusters),
            cloud_labels,
        })
    }

    /// Runs the controllers over the DIG's inputs and stores the result as a
    /// new revision, entering `next` in the same write.
    fn build(
        &self,
        dig: &DigRef,
        mut state: DigState,
        next: DeployState,
        adopt_from: Option<String>,
        actor: Actor,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let action = match next {
            DeployState::Updated => "update",
            _ => "instantiate",
        };
        let revision = state.latest + 1;
        // The DIG's key and revision tie this to the reconcile that follows.
        let span = tracing::info_span!("deploy", dig = %dig.key(), action, revision);
        let _entered = span.enter();
        let started = std::time::Instant::now();
        let scope = self.deployment_scope(dig)?;
        let access = scope.access.clone();
        let Inputs {
            release,
            apps,
            app_order,
            dependencies,
            clusters,
            steps,
        } = inputs::gather(
            &self.db,
            &self.registry,
            crate::intents::IntentSources {
                catalog: &self.intents,
                facts: self.sync.as_ref(),
            },
            &self.generic,
            &self.helm,
            dig,
            scope,
        )?;
        self.metrics
            .stage(action, "inputs", started.elapsed().as_secs_f64());
        let mut draft = DraftContext::new(apps, clusters);
        let pipeline: Vec<Step<'_>> = steps
            .iter()
            .map(|s| Step {
                controller: &s.controller,
                intent: s.intent.clone(),
                nodes: s.nodes.as_deref(),
            })
            .collect();
        let runs = run_controllers(&mut draft, &pipeline)?;
        for (stage, kind) in [
            ("placement", ControllerKind::Placement),
            ("actions", ControllerKind::Action),
        ] {
            let seconds = runs
                .iter()
                .filter(|r| r.kind == kind)
                .map(|r| r.seconds)
                .sum();
            self.metrics.stage(action, stage, seconds);
        }
        for run in &runs {
            for line in run.log.text.lines() {
                tracing::info!(controller = %run.controller, "{line}");
            }
        }
        let service_mirrors =
            crate::service_discovery::mirrors_in(steps.iter().map(|s| s.intent.as_str()));
        let apps = draft.into_stored();
        let confinement = match actor {
            Actor::Admin => None,
            Actor::Tenant => Some(self.confine(&dig.project, &access, &apps)?),
        };
        let meta = ContextMeta {
            project: dig.project.clone(),
            composite_app: dig.composite_app.clone(),
            composite_app_version: dig.version.clone(),
            deployment_intent_group: dig.name.clone(),
            release,
            revision,
            created: stored::now(),
            app_order,
            dependencies,
            access,
            adopt_from,
            confinement,
            service_mirrors,
        };
        state.enter(next, revision);
        let writing = std::time::Instant::now();
        self.contexts
            .write(&dig.key(), &meta, &apps, &state, guard.fence())?;
        self.metrics
            .stage(action, "store", writing.elapsed().as_secs_f64());
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            "context built and stored"
        );
        self.sync.changed(&dig.key());
        if meta.service_mirrors.is_empty() {
            self.mirror_follows(dig, Follow::Terminate, guard)?;
        }
        Ok(state)
    }

    /// The DIG's state and, when it has a context, the context with what
    /// rsync recorded for it: resource statuses and cluster connectivity.
    pub fn status(
        &self,
        dig: &DigRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.db.get(&dig.id())?;
        let (state, mut synced) = self.synced(&dig.key())?;
        // Only a revision that asks for service discovery has a mirror
        // deployed (or a reason why not): the others read nothing more.
        if let Some(synced) = synced
            .as_mut()
            .filter(|s| !s.context.meta.service_mirrors.is_empty())
        {
            let (mirror, note) = self.mirror_status(dig)?;
            synced.service_discovery = note;
            // Its app beside the DIG's own, unless one of those has its name.
            let taken = |app: &str| synced.context.apps.iter().any(|a| a.name == app);
            if let Some(mirror) = mirror.filter(|_| !taken(crate::service_discovery::MIRROR_APP)) {
                synced.context.apps.extend(mirror.context.apps);
                synced.statuses.extend(mirror.statuses);
                for (cluster, connectivity) in mirror.connectivity {
                    synced.connectivity.entry(cluster).or_insert(connectivity);
                }
            }
        }
        Ok((state, synced))
    }

    /// The state and synced context of what is stored under `key`.
    pub(super) fn synced(
        &self,
        key: &str,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        let state = self.contexts.state(key)?;
        if state.revision == 0 {
            return Ok((state, None));
        }
        let context = self.contexts.read(key, state.revision)?;
        let statuses = self.contexts.statuses(key, state.revision)?;
        let mut connectivity = self.contexts.connectivity(key, state.revision)?;
        // A settled DIG sends nothing to its clusters, so what it recorded
        // last may be old: a cluster the probes find unreachable now is
        // being retried, whatever the DIG last saw.
        let placed: std::collections::BTreeSet<&ClusterRef> = context
            .apps
            .iter()
            .flat_map(|app| app.placement.iter().map(|p| &p.cluster))
            .collect();
        for (cluster, health) in self.contexts.healths()? {
            if health.state == stored::Reachability::Unreachable && placed.contains(&cluster) {
                connectivity.insert(cluster, Connectivity::Retrying);
            }
        }
        Ok((
            state,
            Some(SyncedContext {
                context,
                statuses,
                connectivity,
                service_discovery: None,
            }),
        ))
    }

    /// A cluster's kubeconfig changed (or the cluster was deleted); the
    /// next sync reads the stored one again.
    pub fn cluster_changed(&self, provider: &str, cluster: &str) {
        self.sync
            .cluster_changed(&ClusterRef::new(provider, cluster));
    }

    /// Every cluster's health as rsync's probes last recorded it.
    pub fn cluster_healths(&self) -> Result<Vec<(ClusterRef, ClusterHealth)>, OrchestratorError> {
        Ok(self.contexts.healths()?)
    }

    /// What rsync's probe last saw of a cluster; `None` before its first probe.
    pub fn cluster_health(
        &self,
        provider: &str,
        cluster: &str,
    ) -> Result<Option<ClusterHealth>, OrchestratorError> {
        self.db.get(&ResourceId::new(
            Kind::Cluster,
            vec![provider.to_owned(), cluster.to_owned()],
        ))?;
        Ok(self.contexts.health(&ClusterRef::new(provider, cluster))?)
    }

    /// Forgets a deleted DIG's contexts and state.
    pub fn forget(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        self.contexts
            .forget(&crate::service_discovery::mirror_key(dig))?;
        Ok(self.contexts.forget(&dig.key())?)
    }
}
