//! Why an action of the orchestrator failed: one error for every target
//! (DIG, logical cloud, network set, caCert), so that the API maps each
//! variant to one status whatever was acted on.

use wasmco_core::FieldError;
use wasmco_core::wire::Refused;
use wasmco_core::wire::lifecycle::one_of;
use wasmco_runtime::CallError;
use wasmco_store::appcontext::ContextError;
use wasmco_store::db::DbError;

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
    /// A field of what was stored cannot be used; nothing was changed.
    #[error("{}: {}", .0.field, .0.reason)]
    Field(FieldError),
    /// A cluster deploy stopped.
    #[error(transparent)]
    ClusterDeploy(#[from] wasmco_clusters::DeployError),
    /// The host is too busy to do it now (every chart render slot taken);
    /// nothing was changed, and trying again shortly may succeed.
    #[error("{0}")]
    Busy(String),
}

/// Why the DIG's inputs cannot make a deployment.
pub(crate) fn input(message: impl Into<String>) -> OrchestratorError {
    OrchestratorError::Input(message.into())
}
