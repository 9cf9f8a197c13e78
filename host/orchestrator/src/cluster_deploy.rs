//! Clusters wasmco makes on machines (Eggo's deploy, `wasmco-clusters`):
//! a cluster deployment's upload checked as it is stored, its deploy run on
//! a thread of its own with its progress kept after every step, resumed
//! when the host starts again, and the cluster registered under its
//! provider once it is up.

mod addons;
mod cleanup;
mod inventory;
mod members;
mod record;
mod register;
mod run;
mod source;
mod target;
mod upload;

pub use inventory::MachineChange;
pub use run::ClusterDeployments;
pub use target::ClusterDeploymentRef;
pub use upload::DeployUpload;
