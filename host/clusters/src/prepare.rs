//! A deploy file made ready to run: checked, laid out on its machines, its
//! certificates made (or the ones a previous deploy made, extended to new
//! machines) and its package archives read for their digests.

use std::collections::BTreeMap;
use std::path::Path;

use wasmco_core::eggo::DeployConfig;
use wasmco_nodes::{Login, Secret};

use crate::deploy::Deployment;
use crate::error::DeployError;
use crate::material::ClusterMaterial;
use crate::plan::Archive;
use crate::topology::Topology;

impl Deployment {
    /// `config` ready to deploy, logging in with `secret`. `material` is
    /// what an earlier deploy of this cluster made, kept by the caller:
    /// the certificates a cluster runs with are never made twice.
    pub fn prepare(
        config: &DeployConfig,
        secret: Secret,
        material: Option<ClusterMaterial>,
    ) -> Result<Deployment, DeployError> {
        let config = config.with_defaults();
        let mut problems = config.check();
        problems.extend(crate::refusals::refusals(&config));
        if !problems.is_empty() {
            return Err(DeployError::Refused(problems));
        }
        let kept = material
            .as_ref()
            .map(ClusterMaterial::pod_subnets)
            .unwrap_or_default();
        let topology = Topology::keeping(&config, &kept).map_err(DeployError::Refused)?;
        let sans: Vec<String> = config
            .apiserver_cert_sans
            .dnsnames
            .iter()
            .chain(&config.apiserver_cert_sans.ips)
            .cloned()
            .collect();
        let material = match material {
            Some(mut material) => {
                material.cover(&topology, &sans)?;
                material
            }
            None => {
                let pki = wasmco_pki::ClusterPki::create(&topology.cluster)?;
                ClusterMaterial::create(&topology, pki, &sans)?
            }
        };
        let mut archives = BTreeMap::new();
        if let Some(source) = &config.install.package_source {
            for (arch, path) in &source.srcpath {
                let archive =
                    Archive::read(Path::new(path)).map_err(|error| DeployError::Archive {
                        arch: arch.clone(),
                        error,
                    })?;
                archives.insert(arch.clone(), archive);
            }
        }
        Ok(Deployment {
            login: Login {
                user: config.username.clone(),
                secret,
            },
            topology,
            material,
            archives,
            config,
        })
    }
}
