//! Which clusters a caCert is for: its cluster groups, and a project
//! caCert's logical clouds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::document::{FieldError, Reference, check_name};
use crate::kinds::Kind;
use crate::specs::checking::{Scope, Spec};
use crate::specs::patterns::NAME_PATTERN;

/// A caCert's cluster group: the clusters it is for, by name or by label.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaCertClusterGroupSpec {
    /// `name` or `label`.
    pub scope: GroupScope,
    /// The provider of the clusters.
    #[schemars(pattern(NAME_PATTERN))]
    pub cluster_provider: String,
    /// The cluster, for `scope: name`.
    #[serde(default)]
    pub cluster: String,
    /// The label, for `scope: label`.
    #[serde(default)]
    pub label: String,
}

/// How a cluster group names its clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupScope {
    /// One cluster, by name.
    Name,
    /// Every cluster of the provider with the label.
    Label,
}

impl Spec for CaCertClusterGroupSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.clusterProvider", &self.cluster_provider)?;
        match self.scope {
            GroupScope::Name => {
                check_name("spec.cluster", &self.cluster)?;
                Ok(vec![Reference {
                    field: "spec.cluster".into(),
                    kind: Kind::Cluster,
                    path: vec![self.cluster_provider, self.cluster],
                }])
            }
            GroupScope::Label => {
                check_name("spec.label", &self.label)?;
                Ok(vec![Reference {
                    field: "spec.clusterProvider".into(),
                    kind: Kind::ClusterProvider,
                    path: vec![self.cluster_provider],
                }])
            }
        }
    }
}

/// A project caCert's logical cloud: its groups' clusters count only where
/// the cloud has them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaCertLogicalCloudSpec {
    /// The project's logical cloud.
    #[schemars(pattern(NAME_PATTERN))]
    pub logical_cloud: String,
}

impl Spec for CaCertLogicalCloudSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.logicalCloud", &self.logical_cloud)?;
        Ok(vec![Reference {
            field: "spec.logicalCloud".into(),
            kind: Kind::LogicalCloud,
            path: vec![scope.parent[0].clone(), self.logical_cloud],
        }])
    }
}
