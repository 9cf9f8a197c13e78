//! What rsync records per resource and per cluster, as it is stored and
//! as the status API answers it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::Resource;

/// Where a resource stands on its cluster (EMCO's deployed status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Deployed {
    /// Not yet acted on.
    Pending,
    /// Applied to the cluster.
    Applied,
    /// The cluster refused it, or could not be reached in time.
    Failed,
    /// Removed from the cluster.
    Deleted,
    /// Left on the cluster, given back: it was there before this
    /// deployment adopted it.
    Released,
}

impl Deployed {
    /// As the status API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Deployed::Pending => "Pending",
            Deployed::Applied => "Applied",
            Deployed::Failed => "Failed",
            Deployed::Deleted => "Deleted",
            Deployed::Released => "Released",
        }
    }
}

/// Whether rsync reaches a cluster, as EMCO's status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Connectivity {
    /// The cluster answered rsync's last request.
    Available,
    /// The cluster could not be reached; rsync is retrying.
    Retrying,
}

impl Connectivity {
    /// As stored and as the status API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Connectivity::Available => "Available",
            Connectivity::Retrying => "Retrying",
        }
    }

    /// Reads it back as stored.
    pub fn parse(stored: &[u8]) -> Option<Self> {
        [Connectivity::Available, Connectivity::Retrying]
            .into_iter()
            .find(|state| state.as_str().as_bytes() == stored)
    }
}

/// Whether a resource is ready on its cluster, as the cluster says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Readiness {
    /// Rolled out, complete, established or present, by its kind.
    Ready,
    /// Not (yet) ready.
    NotReady,
}

impl Readiness {
    /// As the status API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Ready => "Ready",
            Readiness::NotReady => "NotReady",
        }
    }
}

/// What rsync last did with one resource on one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStatus {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Where it stands.
    pub deployed: Deployed,
    /// Whether it is ready.
    pub ready: Readiness,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The last time someone changed or deleted it on the cluster, and
    /// when rsync put it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

/// How a deployed object drifted from what rsync applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DriftKind {
    /// Its applied fields were changed on the cluster.
    Changed,
    /// It was deleted from the cluster.
    Deleted,
}

/// An object found drifted, and its repair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// What happened to it.
    pub kind: DriftKind,
    /// When rsync noticed, RFC 3339.
    pub detected: String,
    /// When rsync applied it again, RFC 3339; absent while that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repaired: Option<String>,
}

/// Whether a cluster's API server answers, as rsync's probe last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Reachability {
    /// It answered the last probe.
    Reachable,
    /// It did not; rsync probes it with backoff meanwhile.
    Unreachable,
}

/// A cluster's health, as the probe records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterHealth {
    /// Reachable or not.
    pub state: Reachability,
    /// Since when, RFC 3339.
    pub since: String,
    /// The last probe's error, kept after the cluster comes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The API server's version (`gitVersion`), once it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ResourceStatus {
    fn of(resource: &Resource, deployed: Deployed, message: Option<String>) -> Self {
        ResourceStatus {
            api_version: resource.api_version.clone(),
            kind: resource.key.kind.clone(),
            name: resource.key.name.clone(),
            deployed,
            ready: Readiness::NotReady,
            // A cluster's answer can be any size; the store keeps a bounded one.
            message: message.map(crate::limits::bounded),
            drift: None,
        }
    }

    /// Applied, not yet ready.
    pub fn applied(resource: &Resource) -> Self {
        Self::of(resource, Deployed::Applied, None)
    }

    /// Failed, with why.
    pub fn failed(resource: &Resource, message: String) -> Self {
        Self::of(resource, Deployed::Failed, Some(message))
    }

    /// Deleted from its cluster.
    pub fn deleted(resource: &Resource) -> Self {
        Self::of(resource, Deployed::Deleted, None)
    }

    /// Given back: it stays on its cluster without wasmco's labels.
    pub fn released(resource: &Resource) -> Self {
        Self::of(
            resource,
            Deployed::Released,
            Some("it was on the cluster before this deployment adopted it, so it stays".into()),
        )
    }
}
