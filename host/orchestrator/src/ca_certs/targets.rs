//! The clusters a caCert is for: those its cluster groups select (a
//! provider's), or those its logical clouds' groups select within each
//! cloud (a project's), each with the clouds' namespaces.

use std::collections::BTreeSet;

use wasmco_core::Kind;
use wasmco_core::specs::{
    CaCertClusterGroupSpec, CaCertLogicalCloudSpec, ClusterReferenceSpec, GroupScope,
    LogicalCloudSpec,
};
use wasmco_store::db::{ResourceDb, ResourceId};

use crate::clusters::clusters;
use crate::draft::ClusterInfo;
use crate::error::OrchestratorError;
use crate::target::{CaCertRef, CaCertScope, CertStage};

/// A cluster a caCert is for, with the namespaces of the logical clouds
/// it reached it through (a project's caCert).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    pub(super) provider: String,
    pub(super) cluster: String,
    pub(super) namespaces: BTreeSet<String>,
}

impl Target {
    /// EMCO's handle for a cluster: `provider+cluster`.
    pub(super) fn handle(&self) -> String {
        format!("{}+{}", self.provider, self.cluster)
    }

    pub(super) fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::Cluster,
            vec![self.provider.clone(), self.cluster.clone()],
        )
    }
}

/// The clusters the caCert is for, each once, in the order its groups
/// (and, for a project's, its logical clouds) name them.
pub(super) fn targets(db: &ResourceDb, cert: &CaCertRef) -> Result<Vec<Target>, OrchestratorError> {
    let all_clusters = clusters(db)?;
    let mut targets: Vec<Target> = Vec::new();
    let mut add = |provider: &str, cluster: &str, namespace: Option<&str>| {
        let index = match targets
            .iter()
            .position(|t| t.provider == provider && t.cluster == cluster)
        {
            Some(index) => index,
            None => {
                targets.push(Target {
                    provider: provider.to_owned(),
                    cluster: cluster.to_owned(),
                    namespaces: BTreeSet::new(),
                });
                targets.len() - 1
            }
        };
        if let Some(namespace) = namespace.filter(|n| !n.is_empty()) {
            targets[index].namespaces.insert(namespace.to_owned());
        }
    };
    let id = cert.id();
    match &cert.scope {
        CaCertScope::Provider(_) => {
            let groups: Vec<(ResourceId, CaCertClusterGroupSpec)> =
                db.list_specs(Kind::CaCertClusterGroup, &id.path)?;
            for (_, group) in groups {
                for (provider, cluster) in group_clusters(&group, &all_clusters) {
                    add(provider, cluster, None);
                }
            }
        }
        CaCertScope::Project(project) => {
            let bindings: Vec<(ResourceId, CaCertLogicalCloudSpec)> =
                db.list_specs(Kind::CaCertLogicalCloud, &id.path)?;
            for (binding, spec) in bindings {
                let cloud = ResourceId::new(
                    Kind::LogicalCloud,
                    vec![project.clone(), spec.logical_cloud.clone()],
                );
                let cloud_spec: LogicalCloudSpec = db.spec(&cloud)?;
                let namespace = (!cloud_spec.is_admin()).then_some(cloud_spec.namespace);
                let members: BTreeSet<(String, String)> = db
                    .list_specs::<ClusterReferenceSpec>(
                        Kind::LogicalCloudClusterReference,
                        &cloud.path,
                    )?
                    .into_iter()
                    .map(|(_, r)| (r.cluster_provider, r.cluster))
                    .collect();
                let groups: Vec<(ResourceId, CaCertClusterGroupSpec)> =
                    db.list_specs(Kind::CaCertLcClusterGroup, &binding.path)?;
                for (_, group) in groups {
                    for (provider, cluster) in group_clusters(&group, &all_clusters) {
                        // A group may name clusters outside the cloud;
                        // only the cloud's own count, as in EMCO.
                        if members.contains(&(provider.to_owned(), cluster.to_owned())) {
                            add(provider, cluster, namespace.as_deref());
                        }
                    }
                }
            }
        }
    }
    if targets.is_empty() {
        return Err(OrchestratorError::Input(format!(
            "{} names no cluster: add a cluster group (…/clusters) that selects one{}",
            cert.describe(CertStage::Enrollment),
            match cert.scope {
                CaCertScope::Project(_) => " of its logical clouds",
                CaCertScope::Provider(_) => "",
            }
        )));
    }
    Ok(targets)
}

/// The clusters a group selects: the one it names, if registered, or every
/// cluster of its provider with its label.
fn group_clusters<'a>(
    group: &'a CaCertClusterGroupSpec,
    clusters: &'a [ClusterInfo],
) -> impl Iterator<Item = (&'a str, &'a str)> {
    clusters
        .iter()
        .filter(move |c| {
            c.provider == group.cluster_provider
                && match group.scope {
                    GroupScope::Name => c.name == group.cluster,
                    GroupScope::Label => c.labels.contains(&group.label),
                }
        })
        .map(|c| (c.provider.as_str(), c.name.as_str()))
}
