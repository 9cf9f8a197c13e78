//! A caCert, by where it lives and its name, and its two stages.

use wasmco_core::Kind;
use wasmco_store::db::ResourceId;

/// Where a caCert lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaCertScope {
    /// `/cluster-providers/{provider}/ca-certs`: the groups name the
    /// provider's clusters.
    Provider(String),
    /// `/projects/{project}/ca-certs`: the groups of each logical cloud,
    /// within that cloud's clusters.
    Project(String),
}

/// A caCert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaCertRef {
    /// Where it lives.
    pub scope: CaCertScope,
    /// Its name.
    pub name: String,
}

/// A caCert's two steps, each with its own state and context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertStage {
    /// Sign each cluster's certificate.
    Enrollment,
    /// Put it on the clusters.
    Distribution,
}

impl CertStage {
    /// Its route segment.
    pub fn route(self) -> &'static str {
        match self {
            CertStage::Enrollment => "enrollment",
            CertStage::Distribution => "distribution",
        }
    }

    /// The app of its context, as EMCO names it.
    pub(crate) fn app(self) -> &'static str {
        match self {
            CertStage::Enrollment => "cert-enrollment",
            CertStage::Distribution => "cert-distribution",
        }
    }
}

impl CaCertRef {
    /// Its resource id.
    pub fn id(&self) -> ResourceId {
        match &self.scope {
            CaCertScope::Provider(provider) => {
                ResourceId::new(Kind::CaCert, vec![provider.clone(), self.name.clone()])
            }
            CaCertScope::Project(project) => ResourceId::new(
                Kind::ProjectCaCert,
                vec![project.clone(), self.name.clone()],
            ),
        }
    }

    /// The key of one stage's context: `_` starts no composite app's name,
    /// so no DIG's, logical cloud's or other caCert's key is the same.
    pub fn key(&self, stage: CertStage) -> String {
        let (owner, marker) = match &self.scope {
            CaCertScope::Provider(provider) => (provider, "_provider-ca-certs"),
            CaCertScope::Project(project) => (project, "_ca-certs"),
        };
        format!("{owner}/{marker}/{}/{}", self.name, stage.route())
    }

    /// The provider or project it belongs to.
    pub(crate) fn owner(&self) -> &str {
        match &self.scope {
            CaCertScope::Provider(owner) | CaCertScope::Project(owner) => owner,
        }
    }

    pub(crate) fn describe(&self, stage: CertStage) -> String {
        let (kind, owner) = match &self.scope {
            CaCertScope::Provider(provider) => ("cluster provider", provider),
            CaCertScope::Project(project) => ("project", project),
        };
        format!(
            "the {} of {kind} {owner}'s ca cert {}",
            stage.route(),
            self.name
        )
    }
}
