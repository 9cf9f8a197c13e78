//! Building a DIG's next context: where it deploys, its inputs gathered,
//! its controllers run over the draft, what a project's member built
//! checked against its tenancy rules, and the result stored as a new
//! revision with the state it enters, in one write.

use std::collections::{BTreeSet, HashMap};

use wasmco_core::specs::{
    DigSpec, FAILOVER_KEY, FailoverIntentSpec, LogicalCloudSpec, ROLLOUT_KEY, RolloutIntentSpec,
};
use wasmco_core::wire::RolloutProgress;
use wasmco_core::{ClusterInfo, ClusterRef, Kind};
use wasmco_runtime::ControllerKind;
use wasmco_store::appcontext::{
    self as stored, Access, ContextMeta, DeployState, DigState, RolloutPlan,
};
use wasmco_store::db::DbError;

use super::inputs::{self, Inputs, Scope, Sources, builtin_intent};
use crate::draft::DraftContext;
use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::metrics::OrchestratorMetrics;
use crate::pipeline::{Step, run_controllers};
use crate::service_discovery::{Follow, Mirrors, mirrors_in};
use crate::shared::Shared;
use crate::target::{DigRef, LogicalCloudRef};
use crate::tenancy::{Actor, Tenancy};

/// What [`Build::compute`] gives: the new revision's meta and apps, and
/// the clusters placement was offered (when asked for).
type Computed = (ContextMeta, Vec<stored::StoredApp>, Vec<ClusterInfo>);

/// What a new revision is for, besides the state it enters.
#[derive(Debug, Default)]
pub(crate) struct Purpose {
    /// The DIG a migrate takes the objects over from.
    pub(crate) adopt_from: Option<String>,
    /// Why wasmco built it by itself (a failover), for the history.
    pub(crate) reason: Option<String>,
}

/// What builds a DIG's contexts.
pub(crate) struct Build<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) sources: Sources<'a>,
    /// How long each stage of an instantiate or update takes.
    pub(crate) metrics: &'a OrchestratorMetrics,
}

impl Build<'_> {
    /// Runs the controllers over the DIG's inputs and stores the result as a
    /// new revision, entering `next` in the same write.
    pub(super) fn run(
        &self,
        dig: &DigRef,
        mut state: DigState,
        next: DeployState,
        purpose: Purpose,
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
        let mut scope = self.deployment_scope(dig)?;
        let db = &self.shared.db;
        let failover: Option<FailoverIntentSpec> =
            builtin_intent(db, dig, FAILOVER_KEY, Kind::FailoverIntent)?;
        // A failover's move and a migrate's take-over go at once.
        let rollout: Option<RolloutIntentSpec> =
            match purpose.reason.is_none() && purpose.adopt_from.is_none() {
                true => builtin_intent(db, dig, ROLLOUT_KEY, Kind::RolloutIntent)?,
                false => None,
            };
        if let Some(failover) = failover.as_ref().filter(|f| f.replaces()) {
            scope.avoid = crate::status::avoided(&self.shared.contexts, failover)?;
        }
        let access = scope.access.clone();
        let inputs = inputs::gather(
            &self.shared.db,
            &self.sources,
            self.shared.sync.as_ref(),
            dig,
            scope,
        )?;
        self.metrics
            .stage(action, "inputs", started.elapsed().as_secs_f64());
        let keep_offered = rollout.is_some();
        let (meta, apps, offered) =
            self.compute(dig, action, inputs, access, actor, keep_offered)?;
        let rollout = match rollout {
            Some(intent) => Some(self.plan(dig, &state, intent, &apps, &offered)?),
            None => None,
        };
        let from = if state.state.is_deployed() {
            state.revision
        } else {
            0
        };
        state.enter_because(next, revision, purpose.reason);
        state.rollout = rollout
            .as_ref()
            .map(|plan| RolloutProgress::started(revision, from, plan.groups.len(), stored::now()));
        let meta = ContextMeta {
            revision,
            adopt_from: purpose.adopt_from,
            failover,
            rollout,
            ..meta
        };
        let writing = std::time::Instant::now();
        self.shared
            .contexts
            .write(&dig.key(), &meta, &apps, &state, guard.fence())?;
        self.metrics
            .stage(action, "store", writing.elapsed().as_secs_f64());
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            "context built and stored"
        );
        self.shared.sync.changed(&dig.key());
        if meta.service_mirrors.is_empty() {
            Mirrors::of(self.shared).follow(dig, Follow::Terminate, guard)?;
        }
        Ok(state)
    }

    /// The groups a rollout of `apps` goes in, `offered` being the
    /// clusters placement was offered; the clusters the current revision
    /// uses and `apps` do not go with the last.
    fn plan(
        &self,
        dig: &DigRef,
        state: &DigState,
        intent: RolloutIntentSpec,
        apps: &[stored::StoredApp],
        offered: &[ClusterInfo],
    ) -> Result<RolloutPlan, OrchestratorError> {
        for (i, gate) in intent.gates.iter().enumerate() {
            let stored = self
                .sources
                .registry
                .current(&gate.controller, &self.shared.db)
                .map_err(|e| OrchestratorError::Input(e.to_string()))?;
            if stored.is_none_or(|c| c.kind() != ControllerKind::Gate) {
                return Err(OrchestratorError::Input(format!(
                    "the rollout intent's spec.gates[{i}] names {}, which is not a stored gate controller",
                    gate.controller
                )));
            }
        }
        let by_ref: HashMap<ClusterRef, &ClusterInfo> =
            offered.iter().map(|c| (c.reference(), c)).collect();
        // In placement order: the first app's clusters as placed, then the
        // ones only later apps use.
        let mut placed: BTreeSet<&ClusterRef> = BTreeSet::new();
        let infos: Vec<&ClusterInfo> = apps
            .iter()
            .flat_map(|app| app.placement.iter().map(|p| &p.cluster))
            .filter(|cluster| placed.insert(cluster))
            .filter_map(|cluster| by_ref.get(cluster).copied())
            .collect();
        let mut leaving = Vec::new();
        if state.state.is_deployed() && state.revision > 0 {
            let (_, before) = self
                .shared
                .contexts
                .read_placed(&dig.key(), state.revision)?;
            leaving.extend(before.into_iter().filter(|c| !placed.contains(c)));
        }
        Ok(RolloutPlan {
            groups: intent.plan(&infos, &leaving),
            intent,
        })
    }

    /// Runs the controllers over `inputs` and checks what a project's
    /// member built; the context's meta (its revision and adoption left to
    /// the caller), apps and, if `keep_offered`, the clusters placement
    /// was offered.
    fn compute(
        &self,
        dig: &DigRef,
        action: &'static str,
        inputs: Inputs,
        access: Access,
        actor: Actor,
        keep_offered: bool,
    ) -> Result<Computed, OrchestratorError> {
        let Inputs {
            release,
            apps,
            app_order,
            dependencies,
            clusters,
            steps,
        } = inputs;
        let offered = if keep_offered {
            clusters.clone()
        } else {
            Vec::new()
        };
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
        let service_mirrors = mirrors_in(steps.iter().map(|s| s.intent.as_str()));
        let apps = draft.into_stored();
        let confinement = match actor {
            Actor::Admin => None,
            Actor::Tenant => {
                Some(Tenancy::of(self.shared).confine(&dig.project, &access, &apps)?)
            }
        };
        let meta = ContextMeta {
            project: dig.project.clone(),
            composite_app: dig.composite_app.clone(),
            composite_app_version: dig.version.clone(),
            deployment_intent_group: dig.name.clone(),
            release,
            revision: 0,
            created: stored::now(),
            app_order,
            dependencies,
            access,
            adopt_from: None,
            confinement,
            service_mirrors,
            failover: None,
            rollout: None,
        };
        Ok((meta, apps, offered))
    }

    /// Where the DIG deploys: the logical cloud its `spec.logicalCloud`
    /// names, which must exist and be instantiated, gives the namespace,
    /// the clusters placement may choose from and, for a standard cloud,
    /// the user rsync applies as. Without one: every cluster, `default`,
    /// the clusters' own kubeconfigs.
    fn deployment_scope(&self, dig: &DigRef) -> Result<Scope, OrchestratorError> {
        let db = &self.shared.db;
        let spec: DigSpec = db.spec(&dig.id())?;
        let Some(cloud) = spec.logical_cloud.filter(|c| !c.is_empty()) else {
            return Ok(Scope::default());
        };
        let lc = LogicalCloudRef {
            project: dig.project.clone(),
            name: cloud.clone(),
        };
        let cloud_spec: LogicalCloudSpec = match db.spec(&lc.id()) {
            Ok(spec) => spec,
            Err(DbError::NotFound(_)) => {
                return Err(OrchestratorError::Input(format!(
                    "spec.logicalCloud names logical cloud {cloud}, which project {} does not have; \
                     create it (an admin cloud is spec: {{level: \"0\"}}) and instantiate it",
                    dig.project
                )));
            }
            Err(error) => return Err(error.into()),
        };
        let state = self.shared.contexts.state(&lc.key())?;
        if !state.state.is_deployed() {
            return Err(OrchestratorError::Input(format!(
                "spec.logicalCloud names logical cloud {cloud}, which is {}; instantiate it first",
                state.state
            )));
        }
        let clusters = lc
            .cluster_references(db)?
            .into_iter()
            .map(|(_, reference)| ClusterRef::new(&reference.cluster_provider, &reference.cluster))
            .collect();
        let admin = cloud_spec.is_admin();
        let cloud_labels = cloud_spec.labels.clone();
        // A standard cloud's namespace as its context made it (and as it
        // was checked then), not as its spec may say since.
        let namespace = match admin {
            true => cloud_spec.namespace,
            false => Tenancy::of(self.shared)
                .cloud_namespace(&lc)?
                .unwrap_or(cloud_spec.namespace),
        };
        Ok(Scope {
            access: Access {
                namespace,
                cloud_user: (!admin).then_some(cloud),
            },
            clusters: Some(clusters),
            avoid: BTreeSet::new(),
            cloud_labels,
        })
    }
}
