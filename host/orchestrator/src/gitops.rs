//! GitOps mode: a git repository of Eggo deploy files, read every poll
//! interval, that the provider's cluster deployments are carried toward.
//! A file added deploys its cluster; machines added to or taken out of its
//! lists join or leave; any other change (a new package archive: a new
//! Kubernetes) rolls out as an upgrade; a file removed is cleaned up and
//! its deployment deleted. One action runs at a time per cluster (the
//! deployments' own locks), each started once per commit: a failed one
//! waits for the next commit. A file that is not a valid deploy file is
//! reported with its field and changes nothing that runs.

mod carry;
mod follower;
mod kept;
mod plan;
mod repo;

pub use follower::{GitOps, GitOpsOptions};
pub use kept::status;
pub use repo::{ClusterRepo, RepoError, Snapshot};
