//! Which cluster deployment an action or a run is about.

/// A cluster deployment: `/cluster-providers/{provider}/cluster-deployments/{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDeploymentRef {
    /// Its cluster provider.
    pub provider: String,
    /// Its name.
    pub name: String,
}

impl ClusterDeploymentRef {
    /// The deployment a resource id names, when it names one.
    pub fn of(id: &wasmco_store::db::ResourceId) -> Option<Self> {
        match (id.kind, id.path.as_slice()) {
            (wasmco_core::Kind::ClusterDeployment, [provider, name]) => Some(Self {
                provider: provider.clone(),
                name: name.clone(),
            }),
            _ => None,
        }
    }

    /// Its resource.
    pub fn id(&self) -> wasmco_store::db::ResourceId {
        wasmco_store::db::ResourceId::new(
            wasmco_core::Kind::ClusterDeployment,
            vec![self.provider.clone(), self.name.clone()],
        )
    }

    /// Its lock's name: `_` starts no project's name, so no DIG's key.
    pub(super) fn lock_key(&self, what: &str) -> String {
        format!("_cluster-deployment/{}/{}/{what}", self.provider, self.name)
    }
}
