//! GitOps mode's status: which commit of the cluster repository each of
//! its deploy files has been carried to, and what stopped the others.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cluster_deploy::ClusterDeploymentState;

/// `GET /v2/gitops`: the repository as last read, and each deploy file in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitOpsStatus {
    /// The repository, as `--cluster-repo` names it (without credentials).
    pub repo: String,
    /// The branch followed (the remote's default when none was named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The provider the clusters are deployments of.
    pub cluster_provider: String,
    /// The commit last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// When the repository was last read (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polled: Option<String>,
    /// Why the last read failed; the clusters were then left as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One entry per deploy file, and per file removed whose cluster is
    /// still being cleaned up.
    #[serde(default)]
    pub files: Vec<GitOpsFile>,
}

/// One deploy file of the repository and where its cluster is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitOpsFile {
    /// Its path in the repository.
    pub path: String,
    /// The cluster deployment it is (its `cluster-id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_deployment: Option<String>,
    /// The deployment's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ClusterDeploymentState>,
    /// The last commit whose version of the file the cluster matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached: Option<String>,
    /// The action last started for it (`deploy`, `join`, `delete`,
    /// `upgrade`, `cleanup`) and the commit it was started for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<GitOpsAction>,
    /// Whether the file has left the repository (its cluster is cleaned
    /// up, then its deployment deleted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// What keeps it from the commit read: a file that is not a valid
    /// Eggo deploy file (its running cluster is left alone), or an action
    /// refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<GitOpsError>,
}

/// An action started on a file's deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitOpsAction {
    /// `deploy`, `join`, `delete`, `upgrade` or `cleanup`.
    pub action: String,
    /// The commit it was started for.
    pub commit: String,
}

/// Why a file's cluster is not at the commit read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitOpsError {
    /// The commit whose file (or action) it is about.
    pub commit: String,
    /// The field of the file at fault (`cluster-id`, `masters[1].ip`, …),
    /// when the file is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong.
    pub reason: String,
}
