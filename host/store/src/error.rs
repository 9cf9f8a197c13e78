//! How the storage engine fails, whichever engine it is.

/// The storage engine failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory could not be opened.
    #[error("cannot open the store at {path}: {reason}")]
    Open {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The store could not be reached (etcd down or without a leader):
    /// worth trying again.
    #[error("the store is unavailable ({operation}: {reason}); try again shortly")]
    Unavailable {
        /// What was being done.
        operation: &'static str,
        /// Why.
        reason: String,
    },
    /// The write is larger than the store takes in one transaction.
    #[error("the write is too large for the store: {reason}")]
    TooLarge {
        /// What the store allows.
        reason: String,
    },
    /// A read or write failed.
    #[error("store {operation} failed: {reason}")]
    Io {
        /// What was being done.
        operation: &'static str,
        /// Why.
        reason: String,
    },
}
