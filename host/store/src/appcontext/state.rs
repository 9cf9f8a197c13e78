//! A DIG's deployment state and the history of its actions.

use serde::{Deserialize, Serialize};

use wasmco_core::wire::{
    DeployState, DeploymentState, History, RolloutProgress, StateAction, Subject,
};

/// A DIG's deployment state and history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DigState {
    /// The current state.
    pub state: DeployState,
    /// The current context revision (0: none).
    pub revision: u64,
    /// The highest revision ever written.
    pub latest: u64,
    /// Every action, oldest first.
    pub actions: Vec<StateAction>,
    /// The DIG (its key) a migrate handed this one's objects to: rsync
    /// removes what is left of this one only once that one holds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_over_to: Option<String>,
    /// The progressive rollout of the current revision, while it has one
    /// (any action ends it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutProgress>,
}

impl DigState {
    /// The state of a DIG nothing was done to yet.
    pub fn created() -> Self {
        DigState {
            state: DeployState::Created,
            revision: 0,
            latest: 0,
            actions: vec![StateAction {
                state: DeployState::Created,
                time: now(),
                revision: 0,
                reason: None,
            }],
            handed_over_to: None,
            rollout: None,
        }
    }

    /// As the API answers it, for `subject`.
    pub fn answer(&self, subject: Subject) -> DeploymentState {
        DeploymentState {
            subject,
            deployed_status: self.state,
            revision: self.revision,
            states: History {
                actions: self.actions.clone(),
            },
            rollout: self.rollout.clone(),
        }
    }

    /// Enters `state` with `revision` current.
    pub fn enter(&mut self, state: DeployState, revision: u64) {
        self.enter_because(state, revision, None);
    }

    /// Enters `state` with `revision` current, for `reason` (kept in the
    /// history) when wasmco acted by itself.
    pub fn enter_because(&mut self, state: DeployState, revision: u64, reason: Option<String>) {
        self.state = state;
        self.handed_over_to = None;
        self.rollout = None;
        self.revision = revision;
        self.latest = self.latest.max(revision);
        self.actions.push(StateAction {
            state,
            time: now(),
            revision,
            reason,
        });
    }
}

/// The current time as RFC 3339.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
