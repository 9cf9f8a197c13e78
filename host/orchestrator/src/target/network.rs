//! The network intents of one cluster, by the cluster's path.

use wasmco_core::Kind;
use wasmco_store::db::ResourceId;

/// The composite app of network contexts: `_` starts no real one's name.
pub(crate) const NETWORK_COMPOSITE_APP: &str = "_network-intents";

/// The network intents of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSetRef {
    /// The cluster's provider.
    pub provider: String,
    /// The cluster.
    pub cluster: String,
}

impl NetworkSetRef {
    pub(crate) fn cluster_id(&self) -> ResourceId {
        ResourceId::new(
            Kind::Cluster,
            vec![self.provider.clone(), self.cluster.clone()],
        )
    }

    /// Its key in the context store; no DIG's or logical cloud's.
    pub fn key(&self) -> String {
        format!("{}/{NETWORK_COMPOSITE_APP}/{}", self.provider, self.cluster)
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "network intents of cluster {}/{}",
            self.provider, self.cluster
        )
    }
}
