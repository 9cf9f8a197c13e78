//! How the context store fails.

use crate::error::StoreError;

/// The context store failed or holds something it cannot read.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored value is not what this version wrote.
    #[error("stored context data at {key} is unreadable: {reason}")]
    Corrupt {
        /// The key.
        key: String,
        /// Why: the error that said so, or a message where nothing failed
        /// but the value is not what was written.
        #[source]
        reason: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The revision is not kept.
    #[error("revision {0} is not kept")]
    NoRevision(u64),
    /// This host no longer holds the lock (or the ownership) the write was
    /// made under: another host has the work now, and nothing was written.
    #[error(
        "this host lost its hold on {0} (its lease ran out); another host has it now, and nothing was written"
    )]
    Fenced(String),
}

impl ContextError {
    /// The value at `key` is unreadable, for `reason`.
    pub(super) fn corrupt(
        key: &str,
        reason: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ContextError::Corrupt {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}
