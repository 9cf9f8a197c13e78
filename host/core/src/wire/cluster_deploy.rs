//! A cluster deployment (Eggo's deploy, see `wasmco-clusters`) as the API
//! answers it: the deployment's state and the actions that move it
//! (deploy, cleanup), and the progress of each machine through Eggo's
//! phases.

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
    /// The deploy or the cleanup stopped at an error; `deploy` resumes
    /// the deploy, `cleanup` takes the machines back.
    Failed,
    /// A host is taking the cluster down (Eggo's cleanup).
    CleaningUp,
    /// Its machines were given back and the cluster unregistered; `deploy`
    /// makes it again.
    CleanedUp,
    /// A host is adding machines to the deployed cluster (Eggo's join).
    Joining,
    /// A host is taking machines out of the deployed cluster (Eggo's
    /// delete): drained, left, cleaned up.
    RemovingNodes,
    /// A host is rolling the deploy file (a new Kubernetes or etcd in its
    /// package archive) out over the machines, one at a time.
    Upgrading,
}

impl ClusterDeploymentState {
    /// The state's name, as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            ClusterDeploymentState::Created => "Created",
            ClusterDeploymentState::Deploying => "Deploying",
            ClusterDeploymentState::Deployed => "Deployed",
            ClusterDeploymentState::Failed => "Failed",
            ClusterDeploymentState::CleaningUp => "CleaningUp",
            ClusterDeploymentState::CleanedUp => "CleanedUp",
            ClusterDeploymentState::Joining => "Joining",
            ClusterDeploymentState::RemovingNodes => "RemovingNodes",
            ClusterDeploymentState::Upgrading => "Upgrading",
        }
    }

    /// Whether a run (a deploy, a cleanup, a join, a delete) is under way,
    /// or was on a host that stopped.
    pub fn is_running(self) -> bool {
        matches!(
            self,
            ClusterDeploymentState::Deploying
                | ClusterDeploymentState::CleaningUp
                | ClusterDeploymentState::Joining
                | ClusterDeploymentState::RemovingNodes
                | ClusterDeploymentState::Upgrading
        )
    }

    /// What a run leading from this state is called, for messages.
    fn run_name(self) -> &'static str {
        match self {
            ClusterDeploymentState::CleaningUp => "cleanup",
            ClusterDeploymentState::Joining => "join",
            ClusterDeploymentState::RemovingNodes => "delete",
            ClusterDeploymentState::Upgrading => "upgrade",
            _ => "deploy",
        }
    }

    /// The state `action` leads to from this one, or why it may not.
    pub fn after(self, action: ClusterDeploymentAction) -> Result<Self, String> {
        use ClusterDeploymentState::*;
        match (action, self) {
            // Every step is idempotent: deploying a deployed cluster again
            // converges it to its file (a changed flag, a lost file).
            (ClusterDeploymentAction::Deploy, Created | Failed | Deployed | CleanedUp) => {
                Ok(Deploying)
            }
            // Cleaning up what was cleaned up finds nothing and ends.
            (ClusterDeploymentAction::Cleanup, Deployed | Failed | CleanedUp) => Ok(CleaningUp),
            (ClusterDeploymentAction::Cleanup, Created) => Err(
                "cannot clean up: it was never deployed, so no machine has anything of it"
                    .to_owned(),
            ),
            // A failed join, delete or upgrade is tried again the same way;
            // after a failed deploy the run finds out whether the cluster
            // answers.
            (ClusterDeploymentAction::Join, Deployed | Failed) => Ok(Joining),
            (ClusterDeploymentAction::Delete, Deployed | Failed) => Ok(RemovingNodes),
            (ClusterDeploymentAction::Upgrade, Deployed | Failed) => Ok(Upgrading),
            (
                ClusterDeploymentAction::Join
                | ClusterDeploymentAction::Delete
                | ClusterDeploymentAction::Upgrade,
                Created | CleanedUp,
            ) => Err(format!(
                "cannot {}: the cluster is not deployed; deploy it first (a new cluster's \
                     machines are the deploy file's)",
                action.route()
            )),
            (action, Deploying | CleaningUp | Joining | RemovingNodes | Upgrading) => Err(format!(
                "cannot {}: a {} of it is under way; wait for it to end (its status says where it is)",
                action.route(),
                self.run_name()
            )),
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
    /// Take the cluster down: its services stopped, what the deploy put on
    /// the machines removed, the cluster unregistered.
    Cleanup,
    /// Add machines to the deployed cluster (body: Eggo's join file).
    Join,
    /// Take machines out of the deployed cluster (body: [`NodeRemoval`]).
    Delete,
    /// Roll the deploy file out over the machines one at a time (workers
    /// drained), as a new Kubernetes comes in its package archive.
    Upgrade,
}

impl ClusterDeploymentAction {
    /// Every action.
    pub const ALL: [ClusterDeploymentAction; 5] = [
        ClusterDeploymentAction::Deploy,
        ClusterDeploymentAction::Cleanup,
        ClusterDeploymentAction::Join,
        ClusterDeploymentAction::Delete,
        ClusterDeploymentAction::Upgrade,
    ];

    /// Its route, under the deployment's item path.
    pub fn route(self) -> &'static str {
        match self {
            ClusterDeploymentAction::Deploy => "deploy",
            ClusterDeploymentAction::Cleanup => "cleanup",
            ClusterDeploymentAction::Join => "join",
            ClusterDeploymentAction::Delete => "delete",
            ClusterDeploymentAction::Upgrade => "upgrade",
        }
    }
}

/// `POST …/cluster-deployments/{clusterDeployment}/cleanup`'s body, all
/// optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupRequest {
    /// Terminate what wasmco deployed on the cluster (its DIGs' and logical
    /// clouds' instantiations, its network intents) first, instead of
    /// refusing while it is there.
    #[serde(default)]
    pub force: bool,
}

/// `POST …/cluster-deployments/{clusterDeployment}/delete`'s body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeRemoval {
    /// The machines' node names, as the deploy file lists them.
    pub nodes: Vec<String>,
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
    /// The kind of the last run begun (`Deploying`, `Joining`, …): what a
    /// `Failed` deployment failed at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<ClusterDeploymentState>,
    /// The machines the last join or delete worked on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
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
    /// What rsync did with the cluster's addons (the file's `yaml`
    /// packages, CoreDNS), once the cluster is registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addons: Option<AddonsStatus>,
    /// A requested cluster's machines, by role, once picked; they are
    /// its until its cleanup ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<crate::eggo::eggops::Picked>,
}

/// The addons of a deployed cluster, as rsync keeps them there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddonsStatus {
    /// Their objects.
    pub objects: usize,
    /// How many are applied.
    pub applied: usize,
    /// How many are ready.
    pub ready: usize,
    /// Each failed object (`Kind name: why`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
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
    /// A leaving machine cordoned and its pods evicted (a delete's first
    /// phase), and an etcd member it runs removed.
    Drain,
    /// `precleanup` hooks (a cleanup's first phase).
    Precleanup,
    /// Services stopped, pods' containers killed, the deploy's files and
    /// directories removed.
    Cleanup,
    /// `postcleanup` hooks.
    Postcleanup,
}

impl Phase {
    /// Whether it is one of a cleanup's (or a delete's) phases.
    pub fn is_cleanup(self) -> bool {
        self == Phase::Drain || Phase::CLEANUP.contains(&self)
    }

    /// A cleanup's phases, in order.
    pub const CLEANUP: [Phase; 3] = [Phase::Precleanup, Phase::Cleanup, Phase::Postcleanup];

    /// A deploy's phases, in order.
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
            Phase::Drain => "drain",
            Phase::Precleanup => "precleanup",
            Phase::Cleanup => "cleanup",
            Phase::Postcleanup => "postcleanup",
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
    /// Why a requested cluster's run waits before any machine is touched
    /// (too few free machines match its requirements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::ClusterDeploymentAction::{Cleanup, Delete, Deploy, Join, Upgrade};
    use super::ClusterDeploymentState::*;

    #[test]
    fn a_run_is_one_at_a_time_and_cleanup_needs_a_deploy_first() {
        assert_eq!(Created.after(Deploy), Ok(Deploying));
        assert_eq!(CleanedUp.after(Deploy), Ok(Deploying));
        assert_eq!(Deployed.after(Cleanup), Ok(CleaningUp));
        // A failed deploy or cleanup may go either way.
        assert_eq!(Failed.after(Cleanup), Ok(CleaningUp));
        assert_eq!(Failed.after(Deploy), Ok(Deploying));
        assert!(
            Created
                .after(Cleanup)
                .unwrap_err()
                .contains("never deployed")
        );
        // Machines join or leave a cluster that is there.
        assert_eq!(Deployed.after(Join), Ok(Joining));
        assert_eq!(Failed.after(Delete), Ok(RemovingNodes));
        assert_eq!(Deployed.after(Upgrade), Ok(Upgrading));
        for absent in [Created, CleanedUp] {
            for action in [Join, Delete, Upgrade] {
                assert!(absent.after(action).unwrap_err().contains("not deployed"));
            }
        }
        for running in [Deploying, CleaningUp, Joining, RemovingNodes, Upgrading] {
            for action in [Deploy, Cleanup, Join, Delete, Upgrade] {
                let refused = running.after(action).unwrap_err();
                assert!(refused.contains("under way"), "{refused}");
            }
        }
        assert!(
            Deploying
                .after(Cleanup)
                .unwrap_err()
                .contains("a deploy of it")
        );
    }
}
