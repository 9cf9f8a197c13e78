//! A cluster deployment: which cluster the deploy file makes (or the
//! request its machines are picked for), and the labels it is registered
//! with once it is up.

use schemars::JsonSchema;
use serde::Deserialize;

use super::checking::{Scope, Spec};
use crate::document::{FieldError, Reference};
use crate::eggo::eggops::ClusterRequestSpec;
use crate::kinds::Kind;

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
    /// Eggops' `Cluster` spec: the machines are picked from the provider's
    /// by requirements, and the deploy file made from them, instead of a
    /// `file` part.
    #[serde(default)]
    pub request: Option<ClusterRequestSpec>,
}

impl ClusterDeploymentSpec {
    /// The cluster's name under the provider.
    pub fn cluster_name<'a>(&'a self, deployment: &'a str) -> &'a str {
        self.cluster.as_deref().unwrap_or(deployment)
    }
}

impl Spec for ClusterDeploymentSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        if let Some(cluster) = &self.cluster {
            crate::check_name("spec.cluster", cluster)?;
        }
        for (i, label) in self.labels.iter().enumerate() {
            crate::check_name(&format!("spec.labels[{i}]"), label)?;
        }
        let Some(request) = &self.request else {
            return Ok(Vec::new());
        };
        request.check().map_err(|e| {
            let inner = e.field.strip_prefix("spec.").unwrap_or(&e.field);
            FieldError::new(format!("spec.request.{inner}"), e.reason)
        })?;
        // What it names must be there, and stays while it is.
        let under_provider = |field: &str, kind: Kind, name: &str| Reference {
            field: format!("spec.request.{field}"),
            kind,
            path: vec![scope.parent[0].clone(), name.to_owned()],
        };
        let mut references = vec![under_provider(
            "machineLoginSecret.name",
            Kind::MachineLogin,
            &request.machine_login_secret.name,
        )];
        if let Some(infrastructure) = &request.infrastructure {
            references.push(under_provider(
                "infrastructure.name",
                Kind::Infrastructure,
                &infrastructure.name,
            ));
        }
        Ok(references)
    }
}
