//! Runs the controllers of a deployment over its AppContext [`draft`], and
//! moves DIGs, logical clouds, network sets and caCerts through their
//! states. Finished contexts go to the store and through its hand-off port
//! to whichever [`SyncEngine`] the binary wired in; this crate never sees
//! rsync.
//!
//! [`Orchestrator`] is the entry point; each concern (the DIGs, the
//! logical clouds, the networks, the caCerts, service discovery) is a
//! module of its own working over the stores they share.

mod background;
pub mod budget;
mod ca_certs;
mod cluster_deploy;
pub mod cluster_pki;
mod clusters;
mod dig;
pub mod draft;
mod error;
mod failover;
mod follow_ups;
pub mod gitops;
pub mod intents;
mod locks;
mod logical_cloud;
pub mod metrics;
mod network;
mod orchestrator;
pub mod pipeline;
mod registry;
mod rollout;
pub mod service_discovery;
mod shared;
mod status;
mod target;
mod tenancy;

pub use background::Background;
pub use cluster_deploy::{ClusterDeploymentRef, ClusterDeployments, DeployUpload, MachineChange};
pub use dig::RolloutAction;
pub use error::OrchestratorError;
pub use locks::DeclarationLock;
pub use orchestrator::Orchestrator;
pub use pipeline::{ControllerRun, Step, run_controllers};
pub use registry::ControllerRegistry;
pub use status::{SyncedContext, TalliedContext};
pub use target::{CaCertRef, CaCertScope, CertStage, DigRef, LogicalCloudRef, NetworkSetRef};
pub use tenancy::Actor;
pub use wasmco_store::appcontext::{NoSync, SyncEngine};
