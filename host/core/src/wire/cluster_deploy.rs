//! A cluster deployment (Eggo's deploy, see `wasmco-clusters`) as the API
//! answers it: the deployment's state and the one action that moves it,
//! and the progress of each machine through Eggo's phases.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a cluster deployment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ClusterDeploymentState {
    /// Stored, never deployed.
    Created,
    /// A host is running the deploy.
    Deploying,
    /// Every phase finished; the cluster is registered under the provider.
    Deployed,
    /// The deploy stopped at an error; `deploy` resumes it.
    Failed,
}

impl ClusterDeploymentState {
    /// The state's name, as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            ClusterDeploymentState::Created => "Created",
            ClusterDeploymentState::Deploying => "Deploying",
            ClusterDeploymentState::Deployed => "Deployed",
            ClusterDeploymentState::Failed => "Failed",
        }
    }

    /// The state `action` leads to from this one, or why it may not.
    pub fn after(self, action: ClusterDeploymentAction) -> Result<Self, String> {
        use ClusterDeploymentState::*;
        match (action, self) {
            // Every step is idempotent: deploying a deployed cluster again
            // converges it to its file (a changed flag, a lost file).
            (ClusterDeploymentAction::Deploy, Created | Failed | Deployed) => Ok(Deploying),
            (ClusterDeploymentAction::Deploy, Deploying) => Err(
                "cannot deploy: a deploy of it is under way; wait for it to end (its status says where it is)"
                    .to_owned(),
            ),
        }
    }
}

impl fmt::Display for ClusterDeploymentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a client may ask of a cluster deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterDeploymentAction {
    /// Run (or resume, or converge again) the deploy.
    Deploy,
}

impl ClusterDeploymentAction {
    /// Every action.
    pub const ALL: [ClusterDeploymentAction; 1] = [ClusterDeploymentAction::Deploy];

    /// Its route, under the deployment's item path.
    pub fn route(self) -> &'static str {
        match self {
            ClusterDeploymentAction::Deploy => "deploy",
        }
    }
}

/// `GET …/cluster-deployments/{clusterDeployment}/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeploymentStatus {
    /// The deployment's name.
    pub name: String,
    /// The provider it is under.
    pub cluster_provider: String,
    /// The cluster it registers under the provider.
    pub cluster: String,
    /// Where it is.
    pub state: ClusterDeploymentState,
    /// When the last deploy started, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// When it ended, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// The host running it (or that ran it last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Each machine's phase, step and last error.
    pub progress: DeployProgress,
}

/// The phases of a deploy, in order, as Eggo's design names them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Names, kernel settings, packages, firewall.
    Infrastructure,
    /// `prejoin` hooks.
    Prejoin,
    /// The etcd members.
    Etcd,
    /// The first master's control plane, then the other masters'.
    ControlPlane,
    /// Workers (and masters that run pods): container runtime, kubelet,
    /// kube-proxy, until their Nodes are Ready.
    Bootstrap,
    /// `yaml` packages applied, master-workers tainted.
    Addons,
    /// `postjoin` hooks.
    Postjoin,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 7] = [
        Phase::Infrastructure,
        Phase::Prejoin,
        Phase::Etcd,
        Phase::ControlPlane,
        Phase::Bootstrap,
        Phase::Addons,
        Phase::Postjoin,
    ];
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Infrastructure => "infrastructure",
            Phase::Prejoin => "prejoin",
            Phase::Etcd => "etcd",
            Phase::ControlPlane => "control-plane",
            Phase::Bootstrap => "bootstrap",
            Phase::Addons => "addons",
            Phase::Postjoin => "postjoin",
        })
    }
}

/// One machine's progress.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeProgress {
    /// The phase it is in or last finished.
    pub phase: Option<Phase>,
    /// The step under way, if any.
    pub step: Option<String>,
    /// Phases finished on it.
    pub done: Vec<Phase>,
    /// The last error, until a later attempt gets past it.
    pub error: Option<String>,
    /// The SSH host key fingerprint it showed at first contact; every
    /// later contact must show the same.
    pub host_key: Option<String>,
}

/// A deploy's progress: what the host keeps after every step and reads
/// back to resume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployProgress {
    /// The phase under way or last finished.
    pub phase: Option<Phase>,
    /// Whether every phase finished.
    pub finished: bool,
    /// The error that stopped the deploy, if it stopped.
    pub error: Option<String>,
    /// Each machine's progress, by node name.
    pub nodes: BTreeMap<String, NodeProgress>,
}
