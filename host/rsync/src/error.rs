//! Why rsync could not do its work.

/// Why a reconcile could not run.
#[derive(Debug, thiserror::Error)]
pub enum RsyncError {
    /// The context could not be read or its status written.
    #[error(transparent)]
    Context(#[from] wasmco_store::appcontext::ContextError),
    /// The clusters could not be listed.
    #[error(transparent)]
    Db(#[from] wasmco_store::db::DbError),
    /// The other hosts could not be reached through the store.
    #[error(transparent)]
    Store(#[from] wasmco_store::StoreError),
}
