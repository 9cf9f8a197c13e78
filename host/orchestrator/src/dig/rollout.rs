//! A DIG's progressive rollout as its lifecycle sees it: read, steered
//! by the driver (a group released, a stop), and paused, resumed or
//! aborted by a person.

use wasmco_core::ClusterRef;
use wasmco_core::wire::{RolloutPhase, RolloutProgress};
use wasmco_store::appcontext::DigState;

use super::lifecycle::Digs;
use crate::error::OrchestratorError;
use crate::target::DigRef;
use crate::tenancy::Actor;

/// What a person may do to a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutAction {
    /// No group goes until resumed.
    Pause,
    /// Groups go again (after a pause or a stop).
    Resume,
    /// Back to the revision before the rollout (an instantiate's is
    /// terminated).
    Abort,
}

impl Digs<'_> {
    /// The DIG's rollout, if its current revision has one, and its groups.
    pub(crate) fn rollout(
        &self,
        dig: &DigRef,
    ) -> Result<(Option<RolloutProgress>, Vec<Vec<ClusterRef>>), OrchestratorError> {
        self.shared.db.get(&dig.id())?;
        let state = self.shared.contexts.state(&dig.key())?;
        let Some(progress) = state.rollout.filter(|r| r.revision == state.revision) else {
            return Ok((None, Vec::new()));
        };
        let meta = self
            .shared
            .contexts
            .read_meta(&dig.key(), progress.revision)?;
        let groups = meta.rollout.map(|plan| plan.groups).unwrap_or_default();
        Ok((Some(progress), groups))
    }

    /// Changes the rollout of revision `seen` with `change`, under the
    /// DIG's lock, and tells the sync engine; `None` when the DIG moved on
    /// meanwhile (another revision, no rollout) or `change` changed
    /// nothing.
    pub(crate) fn steer_rollout(
        &self,
        dig: &DigRef,
        seen: u64,
        change: impl FnOnce(&mut RolloutProgress),
    ) -> Result<Option<DigState>, OrchestratorError> {
        let (guard, mut state) = self.begin(dig)?;
        let deployed = state.state.is_deployed() && state.revision == seen;
        let Some(progress) = state
            .rollout
            .as_mut()
            .filter(|r| deployed && r.revision == seen)
        else {
            return Ok(None);
        };
        let before = progress.clone();
        change(progress);
        if *progress == before {
            return Ok(None);
        }
        self.shared
            .contexts
            .put_state(&dig.key(), &state, guard.fence())?;
        self.shared.sync.changed(&dig.key());
        Ok(Some(state))
    }

    /// Pauses, resumes or aborts the DIG's rollout, as `actor`.
    pub(crate) fn act_on_rollout(
        &self,
        dig: &DigRef,
        action: RolloutAction,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        let (progress, _) = self.rollout(dig)?;
        let open = progress.filter(|p| p.phase.is_open()).ok_or_else(|| {
            OrchestratorError::Conflict(format!("{} has no rollout under way", dig.describe()))
        })?;
        let (from, revision) = (open.from, open.revision);
        let refused = |phase: RolloutPhase| {
            OrchestratorError::Conflict(format!(
                "the rollout of {} is {phase}; only {} can be {}",
                dig.describe(),
                match action {
                    RolloutAction::Pause => "a Progressing one",
                    _ => "a Paused or Stopped one",
                },
                match action {
                    RolloutAction::Pause => "paused",
                    _ => "resumed",
                }
            ))
        };
        let steered = match action {
            RolloutAction::Abort => {
                let reason = Some(format!("rollout of revision {revision} aborted"));
                return if from == 0 {
                    self.terminate_because(dig, reason)
                } else {
                    self.rollback_because(dig, from, actor, reason)
                };
            }
            RolloutAction::Pause if open.phase != RolloutPhase::Progressing => {
                return Err(refused(open.phase));
            }
            RolloutAction::Resume if open.phase == RolloutPhase::Progressing => {
                return Err(refused(open.phase));
            }
            RolloutAction::Pause => self.steer_rollout(dig, revision, |p| {
                p.phase = RolloutPhase::Paused;
                p.reason = Some("paused by request".into());
            })?,
            RolloutAction::Resume => self.steer_rollout(dig, revision, |p| {
                p.phase = RolloutPhase::Progressing;
                p.reason = None;
                // A stopped group gets its timeout again.
                p.released_at = wasmco_store::appcontext::now();
            })?,
        };
        match steered {
            Some(state) => Ok(state),
            None => Ok(self.shared.contexts.state(&dig.key())?),
        }
    }
}
