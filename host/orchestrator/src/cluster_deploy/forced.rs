//! A forced cleanup: what wasmco deployed on the cluster is terminated
//! first (DIGs, then the logical clouds they ran in, then network
//! intents), each through its own lifecycle, so its own rules and
//! follow-ups hold; the cleanup's run waits until rsync has taken it off.

use wasmco_core::cloud::CONTEXT_COMPOSITE_APP;
use wasmco_core::wire::ClusterDeploymentStatus;

use super::target::ClusterDeploymentRef;
use crate::error::OrchestratorError;
use crate::orchestrator::Orchestrator;
use crate::target::{DigRef, LogicalCloudRef, NETWORK_COMPOSITE_APP, NetworkSetRef};

/// A deployed context, by the kind of its key.
enum Deployed {
    Dig(DigRef),
    Cloud(LogicalCloudRef),
    Networks(NetworkSetRef),
}

impl Deployed {
    fn of(key: &str) -> Option<Deployed> {
        let parts: Vec<&str> = key.split('/').collect();
        match parts[..] {
            [project, composite_app, version, name] => Some(Deployed::Dig(DigRef {
                project: project.to_owned(),
                composite_app: composite_app.to_owned(),
                version: version.to_owned(),
                name: name.to_owned(),
            })),
            [project, CONTEXT_COMPOSITE_APP, name] => Some(Deployed::Cloud(LogicalCloudRef {
                project: project.to_owned(),
                name: name.to_owned(),
            })),
            [provider, NETWORK_COMPOSITE_APP, cluster] => Some(Deployed::Networks(NetworkSetRef {
                provider: provider.to_owned(),
                cluster: cluster.to_owned(),
            })),
            _ => None,
        }
    }

    /// DIGs before the clouds they run in, network intents last.
    fn order(&self) -> u8 {
        match self {
            Deployed::Dig(_) => 0,
            Deployed::Cloud(_) => 1,
            Deployed::Networks(_) => 2,
        }
    }
}

impl Orchestrator {
    /// `cleanup` of a cluster deployment; with `force`, what is deployed
    /// on its cluster is terminated first instead of refusing.
    pub fn cleanup_cluster_deployment(
        &self,
        target: &ClusterDeploymentRef,
        force: bool,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        let deployments = self.cluster_deployments();
        if force {
            let mut deployed = Vec::new();
            for key in deployments.deployed_on_cluster_of(target)? {
                let kind = Deployed::of(&key).ok_or_else(|| {
                    OrchestratorError::Deployed(format!(
                        "{key} is deployed on the cluster and a forced cleanup cannot terminate \
                         it; terminate it, then clean up"
                    ))
                })?;
                deployed.push(kind);
            }
            deployed.sort_by_key(Deployed::order);
            for kind in deployed {
                match kind {
                    Deployed::Dig(dig) => self.terminate(&dig)?,
                    Deployed::Cloud(cloud) => self.terminate_logical_cloud(&cloud)?,
                    Deployed::Networks(set) => self.terminate_networks(&set)?,
                };
            }
        }
        deployments.cleanup(target, force)
    }
}
