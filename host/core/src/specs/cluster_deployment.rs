//! A cluster deployment: which cluster the deploy file makes, and the
//! labels it is registered with once it is up.

use schemars::JsonSchema;
use serde::Deserialize;

use super::checking::{Scope, Spec};
use crate::document::{FieldError, Reference};

/// What a cluster deployment adds to its Eggo deploy file (the `file` part).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterDeploymentSpec {
    /// The name the cluster is registered under in the provider; the
    /// deployment's own name when absent.
    #[serde(default)]
    pub cluster: Option<String>,
    /// The cluster's labels once registered, for placement intents to
    /// select it by.
    #[serde(default)]
    pub labels: Vec<String>,
}

impl ClusterDeploymentSpec {
    /// The cluster's name under the provider.
    pub fn cluster_name<'a>(&'a self, deployment: &'a str) -> &'a str {
        self.cluster.as_deref().unwrap_or(deployment)
    }
}

impl Spec for ClusterDeploymentSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        if let Some(cluster) = &self.cluster {
            crate::check_name("spec.cluster", cluster)?;
        }
        for (i, label) in self.labels.iter().enumerate() {
            crate::check_name(&format!("spec.labels[{i}]"), label)?;
        }
        Ok(Vec::new())
    }
}
