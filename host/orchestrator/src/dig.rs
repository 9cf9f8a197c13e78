//! What the orchestrator's modules share: a DIG by its path, and why an
//! action on one failed. Kept apart so that reading a DIG's inputs and
//! acting on the DIG do not import each other.

use wasmco_core::Kind;
use wasmco_core::wire::Refused;
use wasmco_core::wire::lifecycle::one_of;
use wasmco_runtime::CallError;
use wasmco_store::appcontext::ContextError;
use wasmco_store::db::{DbError, ResourceId};

/// A deployment intent group, by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigRef {
    /// Project.
    pub project: String,
    /// Composite app.
    pub composite_app: String,
    /// Composite app version.
    pub version: String,
    /// The DIG's name.
    pub name: String,
}

impl DigRef {
    /// The DIG as a database resource.
    pub fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::DeploymentIntentGroup,
            vec![
                self.project.clone(),
                self.composite_app.clone(),
                self.version.clone(),
                self.name.clone(),
            ],
        )
    }

    /// The DIG at a DIG resource's path (project, composite app, version, name).
    pub fn from_path(path: &[String]) -> Self {
        let part = |i: usize| path.get(i).cloned().unwrap_or_default();
        DigRef {
            project: part(0),
            composite_app: part(1),
            version: part(2),
            name: part(3),
        }
    }

    pub(super) fn version_path(&self) -> Vec<String> {
        vec![
            self.project.clone(),
            self.composite_app.clone(),
            self.version.clone(),
        ]
    }

    /// The key of its contexts and state.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.project, self.composite_app, self.version, self.name
        )
    }

    /// For messages: "deployment intent group p/ca/v/d".
    pub fn describe(&self) -> String {
        format!("deployment intent group {}", self.key())
    }
}

/// Why an action on a DIG failed.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    /// The DIG (or something it names) is missing, or the database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The action is not allowed in the DIG's state.
    #[error(
        "cannot {} {target}: it is {}, and only {} can become {}",
        .refused.verb, .refused.state, one_of(&.refused.allowed), .refused.next
    )]
    State {
        /// What was acted on: "deployment intent group p/ca/v/d".
        target: String,
        /// What the transition table says.
        refused: Refused,
    },
    /// It is deployed, so it cannot be deleted.
    #[error("{0}")]
    Deployed(String),
    /// It would take what something else holds, or change what something
    /// deployed relies on; nothing was changed.
    #[error("{0}")]
    Conflict(String),
    /// The DIG's inputs cannot make a deployment.
    #[error("{0}")]
    Input(String),
    /// A controller failed; nothing was changed.
    #[error("instantiate failed: {0}")]
    Controller(#[from] CallError),
    /// What a project asked for would reach past what its tenancy policy
    /// allows on the clusters; nothing was changed.
    #[error("{0}")]
    Tenancy(String),
    /// The context store failed.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The host is too busy to do it now (every chart render slot taken);
    /// nothing was changed, and trying again shortly may succeed.
    #[error("{0}")]
    Busy(String),
}
