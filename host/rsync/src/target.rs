//! Where rsync puts resources: a Kubernetes API (through kube-rs) or a
//! directory of YAML files.

mod directory;
mod error;
mod kubernetes;
mod readiness;
mod sync_target;

pub use crate::owner::Labels;
pub use directory::DirectoryTarget;
pub use error::SyncError;
pub use kubernetes::KubeTarget;
pub use readiness::{is_ready, ready_once_applied};
pub use sync_target::{ApplyAs, Changed, SyncTarget, Watched};
