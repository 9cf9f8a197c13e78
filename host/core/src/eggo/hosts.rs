//! The machines of an Eggo cluster, as the deploy file lists them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::serde_shapes::is_zero;

/// One machine in `masters`, `workers` or `etcds`. A machine listed in
/// several roles appears in each list with the same fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HostConfig {
    /// Its Kubernetes node name (an RFC 1123 subdomain).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The address Eggo reaches it at over SSH.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ip: String,
    /// The SSH port. Eggo's checker wants it set; its deployer would
    /// otherwise use 22.
    #[serde(skip_serializing_if = "is_zero")]
    pub port: i64,
    /// `amd64` or `arm64` (x86_64 is written `amd64`); Eggo assumes `amd64`
    /// when left out.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub arch: String,
}

/// The one load balancer in front of the API servers (`loadbalance`, a
/// block, not a list).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadBalance {
    /// Its node name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its SSH address; no address means no load balancer.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ip: String,
    /// Its SSH port.
    #[serde(skip_serializing_if = "is_zero")]
    pub port: i64,
    /// Its architecture.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub arch: String,
    /// The port the balancer listens on for the API servers.
    #[serde(rename = "bind-port", skip_serializing_if = "is_zero")]
    pub bind_port: i64,
}

impl LoadBalance {
    /// Whether the file configures a load balancer at all.
    pub fn is_set(&self) -> bool {
        !self.ip.is_empty()
    }
}
