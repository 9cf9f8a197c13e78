//! What the API answers about a deployment (a DIG, a logical cloud, a
//! cluster's network set, a caCert stage): its state after an action, its
//! status, its computed context. The server writes these and the CLI reads
//! them, so both sides agree by construction.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::lifecycle::{DeployState, StateAction};
use super::status::{Connectivity, Deployed, Drift, Reachability, Readiness};
use crate::hooks::{HookEvent, StoredHook};
use crate::specs::OpStatus;

/// Which deployment a state or status is of; the fields its kind has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// Its project (a DIG's, a logical cloud's, a project caCert's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// A DIG's composite app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_app: Option<String>,
    /// A DIG's composite app version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_app_version: Option<String>,
    /// Its name (a network set's is `provider+cluster`).
    pub name: String,
    /// A network set's or a provider caCert's cluster provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_provider: Option<String>,
    /// A network set's cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// A caCert's stage (`enrollment`, `distribution`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

/// A deployment's actions, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct History {
    /// Each state entered, when, and the revision then current.
    pub actions: Vec<StateAction>,
}

/// A deployment's state and history: what an action answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentState {
    /// What it is of.
    #[serde(flatten)]
    pub subject: Subject,
    /// Its state.
    pub deployed_status: DeployState,
    /// The current context revision (0: none yet).
    pub revision: u64,
    /// Its history.
    pub states: History,
    /// The progressive rollout of its current revision, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<super::RolloutProgress>,
}

impl DeploymentState {
    /// When it was created: its history's first entry.
    pub fn created(&self) -> Option<&str> {
        self.states.actions.first().map(|a| a.time.as_str())
    }
}

/// Whether a cluster's API server answers, `Unknown` before its first probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ClusterState {
    /// It answered the last probe.
    Reachable,
    /// It did not.
    Unreachable,
    /// Not probed yet.
    Unknown,
}

impl fmt::Display for ClusterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClusterState::Reachable => "Reachable",
            ClusterState::Unreachable => "Unreachable",
            ClusterState::Unknown => "Unknown",
        })
    }
}

impl From<Option<Reachability>> for ClusterState {
    fn from(probed: Option<Reachability>) -> Self {
        match probed {
            Some(Reachability::Reachable) => ClusterState::Reachable,
            Some(Reachability::Unreachable) => ClusterState::Unreachable,
            None => ClusterState::Unknown,
        }
    }
}

/// Whether rsync reached a cluster for a deployment, `Unknown` before it
/// tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Link {
    /// The cluster answered rsync's last request.
    Available,
    /// rsync is retrying.
    Retrying,
    /// rsync has not tried yet.
    Unknown,
}

impl From<Option<Connectivity>> for Link {
    fn from(seen: Option<Connectivity>) -> Self {
        match seen {
            Some(Connectivity::Available) => Link::Available,
            Some(Connectivity::Retrying) => Link::Retrying,
            None => Link::Unknown,
        }
    }
}

/// A resource's group, version and kind, as EMCO's status spells them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Gvk {
    /// The API group (empty for the core group).
    #[serde(rename = "Group")]
    pub group: String,
    /// The version.
    #[serde(rename = "Version")]
    pub version: String,
    /// The kind.
    #[serde(rename = "Kind")]
    pub kind: String,
}

impl Gvk {
    /// From an object's `apiVersion` and `kind`.
    pub fn of(api_version: &str, kind: &str) -> Self {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Gvk {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }
}

/// One resource (or hook) of a status: its deployed state (`status=deployed`)
/// or its readiness (`status=ready`), and with `output=detail` why it
/// failed and how it drifted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceEntry {
    /// What it is.
    #[serde(rename = "GVK")]
    pub gvk: Gvk,
    /// Its name.
    pub name: String,
    /// Where it stands (`status=deployed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_status: Option<Deployed>,
    /// Whether it is ready (`status=ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_status: Option<Readiness>,
    /// Why it failed (`output=detail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it drifted and was repaired (`output=detail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// A hook's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<HookEvent>>,
}

impl ResourceEntry {
    /// The state it counts under: its readiness or its deployed state.
    pub fn state(&self) -> &'static str {
        match (self.ready_status, self.deployed_status) {
            (Some(ready), _) => ready.as_str(),
            (None, Some(deployed)) => deployed.as_str(),
            (None, None) => Deployed::Pending.as_str(),
        }
    }
}

/// An app's resources on one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The cluster's provider.
    pub cluster_provider: String,
    /// The cluster.
    pub cluster: String,
    /// Whether rsync reaches it.
    pub connectivity: Link,
    /// The app's resources there.
    pub resources: Vec<ResourceEntry>,
    /// Hooks that ran there, apart from the resources and their counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<ResourceEntry>,
}

/// An app's status, per cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AppStatus {
    /// The app.
    pub name: String,
    /// Its clusters.
    pub clusters: Vec<ClusterStatus>,
}

/// `GET …/status`: a deployment's state and what rsync did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStatus {
    /// The deployment and its state.
    #[serde(flatten)]
    pub deployment: DeploymentState,
    /// A cluster's status only: whether its API server answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ClusterState>,
    /// A cluster's status only: since when, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// A cluster's status only: the last probe's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// A cluster's status only: its API server's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `status=ready`: Ready when every resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_status: Option<Readiness>,
    /// `status=ready`: resources per readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_counts: Option<BTreeMap<String, u64>>,
    /// `status=deployed`: resources per deployed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_counts: Option<BTreeMap<String, u64>>,
    /// Per app and cluster (absent with `output=summary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apps: Option<Vec<AppStatus>>,
    /// Why services the DIG asks to make known to their clients are not
    /// (yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_discovery: Option<String>,
    /// rsync has not yet finished a whole pass towards the latest action
    /// (every app applied, and what an earlier revision put on clusters
    /// this one leaves removed): after an update or a rollback the
    /// resources may all read Ready while this is so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconciling: bool,
}

impl DeploymentStatus {
    /// The counts, whichever the query asked for.
    pub fn counts(&self) -> Option<&BTreeMap<String, u64>> {
        self.ready_counts.as_ref().or(self.deployed_counts.as_ref())
    }
}

/// An app's dependency on another app, as a context stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppDependency {
    /// The app depended on.
    pub app: String,
    /// What it must have reached.
    pub op_status: OpStatus,
    /// Seconds to wait after it reaches that status.
    pub wait: u64,
}

/// An app's final manifests on one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextCluster {
    /// The cluster's provider.
    pub cluster_provider: String,
    /// The cluster.
    pub cluster: String,
    /// The anyOf group it was chosen from.
    pub group: Option<String>,
    /// The objects rsync applies there.
    pub resources: Vec<serde_json::Value>,
}

/// An app of a computed context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextApp {
    /// The app.
    pub name: String,
    /// Its clusters.
    pub clusters: Vec<ContextCluster>,
    /// Its Helm hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<StoredHook>,
}

/// `GET …/{dig}/context`: the computed AppContext.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextBody {
    /// The DIG and its state (`revision` is the one shown).
    #[serde(flatten)]
    pub deployment: DeploymentState,
    /// Apps in deployment order.
    pub app_order: Vec<String>,
    /// Per app, the apps it waits for.
    pub dependencies: BTreeMap<String, Vec<AppDependency>>,
    /// Per app, its clusters and manifests.
    pub apps: Vec<ContextApp>,
}
