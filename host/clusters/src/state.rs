//! Where a deploy is: each machine's phase, the step under way, the last
//! error, and the host key it showed first. Kept by the caller (the store)
//! after every change, shown by status, and read back when a deploy is
//! resumed.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The phases of a deploy, in order, as Eggo's design names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// A deploy's progress.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployState {
    /// The phase under way or last finished.
    pub phase: Option<Phase>,
    /// Whether every phase finished.
    pub finished: bool,
    /// The error that stopped the deploy, if it stopped.
    pub error: Option<String>,
    /// Each machine's progress, by node name.
    pub nodes: BTreeMap<String, NodeProgress>,
}
