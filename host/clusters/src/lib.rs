//! Eggo's cluster lifecycle in wasmco: a Kubernetes cluster made on
//! machines over SSH from Eggo's deploy file. The phases follow Eggo's
//! design (infrastructure, etcd, the first control plane, the other nodes,
//! addons); the certificates come from wasmco's PKI and stay in wasmco's
//! store; every step is idempotent, so a deploy interrupted at any point is
//! resumed by running it again.

mod addons;
mod cleanup;
mod commands;
mod connect;
mod deploy;
mod error;
mod join;
mod leave;
mod material;
mod plan;
mod prepare;
mod refusals;
mod topology;
mod trim;
mod units;
mod upgrade;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_membership;

pub use addons::{Addon, addons};
pub use cleanup::cleanup;
pub use deploy::{DeploySettings, Deployment, Report, deploy};
pub use error::DeployError;
pub use join::join;
pub use leave::remove_nodes;
pub use material::{ClusterMaterial, EtcdStart, NodeMaterial};
pub use plan::{Archive, PACKAGE_DIR, Plan, Step};
pub use refusals::{refusals, template};
pub use topology::{Machine, Roles, Topology};
pub use upgrade::upgrade;
pub use wasmco_core::wire::{DeployProgress, NodeProgress, Phase};
