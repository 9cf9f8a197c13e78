//! Runs the controllers of a deployment over its AppContext, and moves DIGs
//! through their states.

mod deploy;
mod dig;
mod inputs;
mod locks;
mod logical_cloud;
pub mod pipeline;
mod registry;

pub use crate::appcontext::{ContextHandoff, NoSync, SyncEngine};
pub use deploy::{Orchestrator, SyncedContext};
pub use dig::{DigRef, OrchestratorError};
pub use logical_cloud::{KUBECONFIG_SECRET, LogicalCloudRef};
pub use pipeline::{ControllerRun, Step, run_controllers};
pub use registry::ControllerRegistry;
