//! Kubeconfigs carry data, never instructions.
//!
//! A kubeconfig can tell a client to run a command (`exec`, `auth-provider`),
//! read files of the machine it runs on (`tokenFile`, `client-certificate`,
//! `client-key`, `certificate-authority`), go through a proxy, or talk to
//! the cloud's metadata service. A cluster's kubeconfig comes from a user of
//! the API, so none of that may reach the host: [`KubeconfigPolicy::check`]
//! refuses it at upload, and [`CheckedKubeconfig::client_config`] builds the
//! kube-rs client from an allow-list of inline values only, so a stored
//! kubeconfig that an older version accepted still cannot run or read
//! anything.

mod check;
mod checked;
mod error;
mod policy;
mod server;

pub use checked::{CheckedKubeconfig, cluster_status};
pub use error::KubeconfigError;
pub use policy::KubeconfigPolicy;

#[cfg(test)]
mod tests;
