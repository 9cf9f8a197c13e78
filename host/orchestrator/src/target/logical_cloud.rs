//! A logical cloud, by its path.

use wasmco_core::Kind;
use wasmco_core::cloud::CONTEXT_COMPOSITE_APP;
use wasmco_core::specs::ClusterReferenceSpec;
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

/// The app of a logical cloud's context that makes its namespace and roles.
pub(crate) const CLOUD_APP: &str = "logical-cloud";

/// A logical cloud: `/projects/{project}/logical-clouds/{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogicalCloudRef {
    /// Its project.
    pub project: String,
    /// Its name.
    pub name: String,
}

impl LogicalCloudRef {
    /// Its resource id.
    pub fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::LogicalCloud,
            vec![self.project.clone(), self.name.clone()],
        )
    }

    /// The cloud at a logical cloud resource's id.
    pub(crate) fn from_id(id: &ResourceId) -> Self {
        let part = |i: usize| id.path.get(i).cloned().unwrap_or_default();
        LogicalCloudRef {
            project: part(0),
            name: part(1),
        }
    }

    /// Its key in the context store: no DIG's key starts with it.
    pub fn key(&self) -> String {
        format!("{}/{CONTEXT_COMPOSITE_APP}/{}", self.project, self.name)
    }

    pub(crate) fn describe(&self) -> String {
        format!("logical cloud {}/{}", self.project, self.name)
    }

    /// The path its children live under.
    pub(crate) fn path(&self) -> Vec<String> {
        vec![self.project.clone(), self.name.clone()]
    }

    /// The name of a cluster-scoped object it makes.
    pub(crate) fn cluster_wide_name(&self, what: &str) -> String {
        wasmco_core::cloud::cloud_object_name(&self.project, &self.name, what)
    }

    /// The cloud's cluster references, by id.
    pub(crate) fn cluster_references(
        &self,
        db: &ResourceDb,
    ) -> Result<Vec<(ResourceId, ClusterReferenceSpec)>, DbError> {
        db.list_specs(Kind::LogicalCloudClusterReference, &self.path())
    }
}
