//! A DIG's deployment state and the history of its actions.

use serde::{Deserialize, Serialize};

/// A DIG's deployment states, as EMCO names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeployState {
    /// Defined, not yet approved.
    Created,
    /// Approved for instantiation.
    Approved,
    /// Deployed (revision 1 or a re-instantiation).
    Instantiated,
    /// Deployed again from changed inputs, or rolled back.
    Updated,
    /// Marked for removal from the clusters.
    Terminated,
    /// Deployed, with rsync told to stop working on it (a cluster that
    /// never answers, say); terminate is what follows.
    InstantiateStopped,
    /// Terminated, with rsync told to stop removing; instantiate may follow.
    TerminateStopped,
}

impl DeployState {
    /// The state's name, as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            DeployState::Created => "Created",
            DeployState::Approved => "Approved",
            DeployState::Instantiated => "Instantiated",
            DeployState::Updated => "Updated",
            DeployState::Terminated => "Terminated",
            DeployState::InstantiateStopped => "InstantiateStopped",
            DeployState::TerminateStopped => "TerminateStopped",
        }
    }
}

impl std::fmt::Display for DeployState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a DIG's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateAction {
    /// The state entered.
    pub state: DeployState,
    /// When, RFC 3339.
    pub time: String,
    /// The context revision current after the action (0: none yet).
    pub revision: u64,
}

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
            }],
            handed_over_to: None,
        }
    }

    /// Enters `state` with `revision` current.
    pub fn enter(&mut self, state: DeployState, revision: u64) {
        self.state = state;
        self.handed_over_to = None;
        self.revision = revision;
        self.latest = self.latest.max(revision);
        self.actions.push(StateAction {
            state,
            time: now(),
            revision,
        });
    }
}

/// The current time as RFC 3339.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
