//! A DIG's lifecycle: approve, instantiate, update, migrate, rollback,
//! stop, terminate.
//!
//! Each action checks the DIG's state first (EMCO's states: Created ->
//! Approved -> Instantiated -> Updated | Terminated); instantiate and update
//! build a new AppContext revision and store it with the new state in one
//! batch, so a failed controller leaves no context and no state change.
//! Finished contexts go to the sync engine through its hand-off port.

use std::collections::BTreeSet;

use wasmco_core::ClusterRef;
use wasmco_core::wire::{DigAction, MigrateTo};
use wasmco_store::appcontext::{DigState, StoredContext};
use wasmco_store::db::DbError;

use super::build::{Build, Purpose};
use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::service_discovery::{Follow, MIRROR_APP, Mirrors, mirror_key};
use crate::shared::{Shared, allow};
use crate::status::{SyncedContext, TalliedContext, synced, tallied};
use crate::target::DigRef;
use crate::tenancy::{Actor, Tenancy};

/// The DIGs, over the shared stores.
pub(crate) struct Digs<'a> {
    pub(super) shared: &'a Shared,
    build: Build<'a>,
}

impl<'a> Digs<'a> {
    /// The DIGs as `build.shared` holds them, built by `build`.
    pub(crate) fn new(build: Build<'a>) -> Self {
        Digs {
            shared: build.shared,
            build,
        }
    }

    fn mirrors(&self) -> Mirrors<'a> {
        Mirrors::of(self.shared)
    }

    pub(super) fn begin(&self, dig: &DigRef) -> Result<(TargetGuard, DigState), OrchestratorError> {
        self.shared.begin_at(&dig.key(), &dig.id())
    }

    /// The DIG's state and history.
    pub(crate) fn state(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.shared.db.get(&dig.id())?;
        Ok(self.shared.contexts.state(&dig.key())?)
    }

    /// Created -> Approved.
    pub(crate) fn approve(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        let (guard, mut state) = self.begin(dig)?;
        let next = allow(&dig.describe(), &state, DigAction::Approve)?;
        let revision = state.revision;
        state.enter(next, revision);
        self.shared
            .contexts
            .put_state(&dig.key(), &state, guard.fence())?;
        Ok(state)
    }

    /// Approved, Terminated or TerminateStopped -> Instantiated, with a new
    /// context; `actor`'s tenancy rules checked on it.
    pub(crate) fn instantiate(
        &self,
        dig: &DigRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let next = allow(&dig.describe(), &state, DigAction::Instantiate)?;
        self.build
            .run(dig, state, next, Purpose::default(), actor, &guard)
    }

    /// Instantiated or Updated -> Updated, with a new context from the current inputs.
    pub(crate) fn update(&self, dig: &DigRef, actor: Actor) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let next = allow(&dig.describe(), &state, DigAction::Update)?;
        self.build
            .run(dig, state, next, Purpose::default(), actor, &guard)
    }

    /// Instantiated or Updated -> Updated, placed again for `reason` (a
    /// failover) as it would be updated, unless its revision is no longer
    /// `seen` (someone acted meanwhile: the watch looks again). Built
    /// under the rules it was built under: a tenant's, if a tenant did.
    pub(crate) fn failover(
        &self,
        dig: &DigRef,
        seen: u64,
        reason: String,
    ) -> Result<Option<DigState>, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        if state.revision != seen || !state.state.is_deployed() {
            return Ok(None);
        }
        let next = allow(&dig.describe(), &state, DigAction::Update)?;
        let current = self.shared.contexts.read(&dig.key(), state.revision)?;
        let actor = match current.meta.confinement {
            Some(_) => Actor::Tenant,
            None => Actor::Admin,
        };
        let purpose = Purpose {
            adopt_from: None,
            reason: Some(reason),
        };
        let state = self.build.run(dig, state, next, purpose, actor, &guard)?;
        Ok(Some(state))
    }

    /// EMCO's migrate: the deployed DIG's objects move to `target_dig` of
    /// version `target_version` of the same composite app (Approved), as
    /// one update. The target is instantiated and takes the source's
    /// objects over in place; the source is Terminated, and what the
    /// target does not take is removed once the target holds the rest.
    pub(crate) fn migrate(
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
        let first_guard = self.shared.lock(&first.key())?;
        let second_guard = self.shared.lock(&second.key())?;
        let (source_guard, target_guard) = if source.key() < target.key() {
            (&first_guard, &second_guard)
        } else {
            (&second_guard, &first_guard)
        };
        self.shared.db.get(&source.id())?;
        let mut source_state = self.shared.contexts.state(&source.key())?;
        let source_next = allow(&source.describe(), &source_state, DigAction::Migrate)?;
        match self.shared.db.get(&target.id()) {
            Ok(_) => {}
            Err(DbError::NotFound(_)) => {
                return Err(OrchestratorError::Input(format!(
                    "spec names {}, which does not exist; create and approve it first",
                    target.describe()
                )));
            }
            Err(error) => return Err(error.into()),
        }
        let target_state = self.shared.contexts.state(&target.key())?;
        let target_next = allow(&target.describe(), &target_state, MigrateTo)?;
        let target_state = self.build.run(
            &target,
            target_state,
            target_next,
            Purpose {
                adopt_from: Some(source.key()),
                reason: None,
            },
            actor,
            target_guard,
        )?;
        let revision = source_state.revision;
        source_state.enter(source_next, revision);
        source_state.handed_over_to = Some(target.key());
        self.shared
            .contexts
            .put_state(&source.key(), &source_state, source_guard.fence())?;
        self.shared.sync.changed(&source.key());
        self.mirrors()
            .follow(source, Follow::Terminate, source_guard)?;
        Ok(target_state)
    }

    /// Instantiated or Updated -> Updated, back to a kept revision, which
    /// `actor`'s tenancy rules must allow as they are now.
    pub(crate) fn rollback(
        &self,
        dig: &DigRef,
        revision: u64,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.rollback_because(dig, revision, actor, None)
    }

    /// [`Self::rollback`], for `reason` when wasmco chose to (a rollout's
    /// abort), kept in the history.
    pub(super) fn rollback_because(
        &self,
        dig: &DigRef,
        revision: u64,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, mut state) = self.begin(dig)?;
        let next = allow(&dig.describe(), &state, DigAction::Rollback)?;
        let mut kept = self.shared.contexts.read(&dig.key(), revision)?;
        state.enter_because(next, revision, reason);
        if actor == Actor::Tenant {
            // Held to today's rules, not to those it was built under (or
            // to none, when the admin built it).
            let rules =
                Tenancy::of(self.shared).confine(&dig.project, &kept.meta.access, &kept.apps)?;
            kept.meta.confinement = Some(rules);
            self.shared
                .contexts
                .put_meta(&dig.key(), &kept.meta, &state, guard.fence())?;
        } else {
            self.shared
                .contexts
                .put_state(&dig.key(), &state, guard.fence())?;
        }
        self.shared.sync.changed(&dig.key());
        if kept.meta.service_mirrors.is_empty() {
            self.mirrors().follow(dig, Follow::Terminate, &guard)?;
        }
        Ok(state)
    }

    /// Tells rsync to stop working on the DIG, as EMCO's `stop` does:
    /// Instantiated or Updated -> InstantiateStopped, Terminated ->
    /// TerminateStopped. Nothing more is applied or deleted until the next
    /// action (terminate, or instantiate after a stopped terminate).
    pub(crate) fn stop(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let state =
            self.shared
                .mark(DigAction::Stop, &dig.describe(), &dig.key(), state, &guard)?;
        self.mirrors().follow(dig, Follow::Stop, &guard)?;
        Ok(state)
    }

    /// Instantiated, Updated or InstantiateStopped -> Terminated; the
    /// context is marked for removal.
    pub(crate) fn terminate(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.terminate_because(dig, None)
    }

    /// [`Self::terminate`], with `reason` in the history.
    pub(crate) fn terminate_because(
        &self,
        dig: &DigRef,
        reason: Option<String>,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin(dig)?;
        let state = self.shared.mark_because(
            DigAction::Terminate,
            &dig.describe(),
            &dig.key(),
            state,
            &guard,
            reason,
        )?;
        self.mirrors().follow(dig, Follow::Terminate, &guard)?;
        Ok(state)
    }

    /// The current context (or revision `revision`).
    pub(crate) fn context(
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
        let context = self.shared.contexts.read(&dig.key(), revision)?;
        Ok((state, context))
    }

    /// The DIG's state and, when it has a context, the context with what
    /// rsync recorded for it: resource statuses and cluster connectivity.
    pub(crate) fn status(
        &self,
        dig: &DigRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.shared.db.get(&dig.id())?;
        let (state, mut synced) = synced(&self.shared.contexts, &dig.key())?;
        // Only a revision that asks for service discovery has a mirror
        // deployed (or a reason why not): the others read nothing more.
        if let Some(synced) = synced
            .as_mut()
            .filter(|s| !s.context.meta.service_mirrors.is_empty())
        {
            let (mirror, note) = self.mirrors().status(dig)?;
            synced.service_discovery = note;
            // Its app beside the DIG's own, unless one of those has its name.
            let taken = |app: &str| synced.context.apps.iter().any(|a| a.name == app);
            if let Some(mirror) = mirror.filter(|_| !taken(MIRROR_APP)) {
                synced.context.apps.extend(mirror.context.apps);
                synced.statuses.extend(mirror.statuses);
                for (cluster, connectivity) in mirror.connectivity {
                    synced.connectivity.entry(cluster).or_insert(connectivity);
                }
            }
        }
        Ok((state, synced))
    }

    /// The DIG's state and, when it has a context, the context with
    /// rsync's tally of each cell, as [`Self::status`] reads it otherwise.
    pub(crate) fn tallied(
        &self,
        dig: &DigRef,
        unreachable: &BTreeSet<ClusterRef>,
    ) -> Result<(DigState, Option<TalliedContext>), OrchestratorError> {
        self.shared.db.get(&dig.id())?;
        let (state, mut tallied) = tallied(&self.shared.contexts, &dig.key(), unreachable)?;
        if let Some(tallied) = tallied
            .as_mut()
            .filter(|t| !t.context.meta.service_mirrors.is_empty())
        {
            let taken = |app: &str| tallied.context.apps.iter().any(|a| a.name == app);
            if let Some(mirror) = self
                .mirrors()
                .tallied(dig, unreachable)?
                .filter(|_| !taken(MIRROR_APP))
            {
                tallied.context.apps.extend(mirror.context.apps);
                tallied.tallies.extend(mirror.tallies);
                for (cluster, connectivity) in mirror.connectivity {
                    tallied.connectivity.entry(cluster).or_insert(connectivity);
                }
            }
        }
        Ok((state, tallied))
    }

    /// Forgets a deleted DIG's contexts and state.
    pub(crate) fn forget(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        self.shared.contexts.forget(&mirror_key(dig))?;
        Ok(self.shared.contexts.forget(&dig.key())?)
    }
}
