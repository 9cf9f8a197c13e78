//! What can go wrong on a node. Every error names the node, and a step's
//! error names the step, so a failed deploy says where it stopped.

use std::time::Duration;

/// A node task that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Nothing answered at the node's address in time, or the connection
    /// was refused.
    #[error("node {node}: cannot reach {address}")]
    Unreachable {
        /// The node's name.
        node: String,
        /// `host:port` as dialled.
        address: String,
        /// Why the connection failed.
        #[source]
        source: std::io::Error,
    },
    /// The node answered with a host key other than the one pinned for it:
    /// another machine, or a reinstalled one, at the same address.
    #[error(
        "node {node}: host key {found} is not the pinned {expected}; if the machine was \
         reinstalled on purpose, pin its new key"
    )]
    HostKeyMismatch {
        /// The node's name.
        node: String,
        /// The pinned fingerprint.
        expected: String,
        /// The fingerprint the node showed.
        found: String,
    },
    /// The node refused the login.
    #[error("node {node}: {user} was refused with {method}")]
    LoginRefused {
        /// The node's name.
        node: String,
        /// The login's user.
        user: String,
        /// `password` or `private key`.
        method: &'static str,
    },
    /// The private key could not be read (the reason names no key
    /// material).
    #[error("the private key cannot be read: {0}")]
    BadKey(#[source] Box<russh::keys::Error>),
    /// The SSH session failed after it was set up.
    #[error("node {node}: {step}: the SSH session failed")]
    Session {
        /// The node's name.
        node: String,
        /// The step under way.
        step: String,
        /// What the SSH layer said.
        #[source]
        source: Box<russh::Error>,
    },
    /// A file transfer failed.
    #[error("node {node}: copying {path} failed")]
    Transfer {
        /// The node's name.
        node: String,
        /// The file being written.
        path: String,
        /// What the SFTP layer said.
        #[source]
        source: Box<russh_sftp::client::error::Error>,
    },
    /// A file on wasmco's own machine could not be read for a copy.
    #[error("{path} cannot be read")]
    Local {
        /// The local file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A step ran past its deadline and was killed on the node.
    #[error("node {node}: {step} did not finish within {after:?} and was stopped")]
    TimedOut {
        /// The node's name.
        node: String,
        /// The step.
        step: String,
        /// Its deadline.
        after: Duration,
    },
    /// A step's command ended with a non-zero status.
    #[error("node {node}: {step} failed with status {status}: {stderr}")]
    Failed {
        /// The node's name.
        node: String,
        /// The step.
        step: String,
        /// The command's exit status.
        status: u32,
        /// The end of what it wrote to standard error.
        stderr: String,
    },
    /// A signal ended a step before its deadline (the OOM killer, a
    /// person on the node).
    #[error("node {node}: {step} was killed by SIG{signal}")]
    Killed {
        /// The node's name.
        node: String,
        /// The step.
        step: String,
        /// The signal's name.
        signal: String,
    },
    /// A command ended without an exit status: the session closed under it.
    #[error("node {node}: {step} ended without an exit status")]
    NoStatus {
        /// The node's name.
        node: String,
        /// The step.
        step: String,
    },
    /// A file was to be written outside the directories Eggo's clean-up
    /// may remove files from.
    #[error(
        "node {node}: {path} is outside the directories a deploy may write \
         (Eggo's dst allow-list)"
    )]
    PathRefused {
        /// The node's name.
        node: String,
        /// The refused path.
        path: String,
    },
}

impl NodeError {
    /// Whether trying again later may succeed: the node could not be
    /// reached or the session broke. A refused login, a changed host key or
    /// a failed command wants a person, not a retry.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::Session { .. })
    }
}
