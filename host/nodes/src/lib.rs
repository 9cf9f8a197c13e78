//! The node task manager of Eggo's design: wasmco's hands on the machines
//! a cluster is made of. One SSH session per node; commands run with a
//! deadline that holds on the node too; files land whole or not at all, and
//! only where Eggo's clean-up may later remove them; a node's host key is
//! pinned, so a machine that changed identity is refused, not trusted.
//!
//! Nothing here knows Kubernetes: the cluster lifecycle above decides what
//! runs where, in which order, and records what each node has done.

mod command;
mod error;
mod files;
mod host_key;
mod login;
mod parallel;
mod session;

pub use command::{Command, Output};
pub use error::NodeError;
pub use files::{Copied, FileCopy, LocalFile};
pub use host_key::HostKeyPolicy;
pub use login::{Login, Secret};
pub use parallel::on_each;
pub use session::{NodeAddress, NodeSession, SessionSettings};
