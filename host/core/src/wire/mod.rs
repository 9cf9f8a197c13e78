//! The wire: every body the API answers that a client reads back, typed
//! once for the server that writes it, the CLI that reads it and the
//! OpenAPI document that describes it (its JSON Schemas are derived from
//! these types), and the transition tables of the actions that change a
//! deployment's state.

pub mod cluster_deploy;
pub mod deployment;
pub mod gitops;
pub mod lifecycle;
pub mod rollout;
pub mod status;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cluster_deploy::{
    AddonsStatus, CleanupRequest, ClusterDeploymentAction, ClusterDeploymentState,
    ClusterDeploymentStatus, DeployProgress, NodeProgress, NodeRemoval, Phase,
};
pub use deployment::{
    AppDependency, AppStatus, ClusterState, ClusterStatus, ContextApp, ContextBody, ContextCluster,
    DeploymentState, DeploymentStatus, Gvk, History, Link, ResourceEntry, Subject,
};
pub use gitops::{GitOpsAction, GitOpsError, GitOpsFile, GitOpsStatus};
pub use lifecycle::{
    CertAction, CloudAction, DeployState, DigAction, Lifecycle, MigrateTo, NetworkAction, Refused,
    StateAction,
};
pub use rollout::{RolloutPhase, RolloutProgress, RolloutStatus};
pub use status::{
    ClusterHealth, Connectivity, Deployed, Drift, DriftKind, Reachability, Readiness,
    ResourceStatus,
};

/// Every error the API answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    /// What went wrong, for a person.
    pub message: String,
    /// The request field at fault, if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// A resource as the API answers it: what was stored, and what the host
/// adds under `status` (a controller's registration, say); its spec as the
/// kind's type `S` where the reader knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answered<S = serde_json::Value> {
    /// Name and descriptions.
    pub metadata: crate::Metadata,
    /// The kind's own fields.
    pub spec: S,
    /// What the host adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}

/// A controller's registration, as its `status` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ControllerStatus {
    /// `placement` or `action`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it is called, lowest first.
    pub priority: i64,
    /// The component's size in bytes.
    pub size: u64,
    /// `sha256:` and the component's digest.
    pub digest: String,
}
