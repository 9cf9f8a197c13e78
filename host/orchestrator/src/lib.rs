//! Runs the controllers of a deployment over its AppContext [`draft`], and
//! moves DIGs and logical clouds through their states. Finished contexts go
//! to the store and through its hand-off port to whichever [`SyncEngine`]
//! the binary wired in; this crate never sees rsync.

pub mod budget;
mod ca_certs;
pub mod cluster_pki;
mod deploy;
mod dig;
pub mod draft;
mod inputs;
pub mod intents;
mod locks;
mod logical_cloud;
pub mod metrics;
mod network;
pub mod pipeline;
mod registry;
pub mod service_discovery;
mod tenancy;

pub use ca_certs::{CaCertRef, CaCertScope, CertStage};
pub use deploy::{Orchestrator, SyncedContext};
pub use dig::{DigRef, OrchestratorError};
pub use locks::DeclarationLock;
pub use logical_cloud::LogicalCloudRef;
pub use network::NetworkSetRef;
pub use pipeline::{ControllerRun, Step, run_controllers};
pub use registry::ControllerRegistry;
pub use service_discovery::FollowUps;
pub use tenancy::Actor;
pub use wasmco_store::appcontext::{NoSync, SyncEngine};
