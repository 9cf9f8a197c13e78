//! Why the server could not start. Each variant keeps its cause as its
//! source and does not repeat it: `main` prints the whole chain.

use std::net::SocketAddr;

use wasmco_runtime::RuntimeError;
use wasmco_store::StoreError;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store would not open.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The runtime would not start.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The resource database could not be read (controllers, clusters, tokens).
    #[error("cannot read the resource database")]
    Db(#[from] wasmco_store::db::DbError),
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The built-in generic placement controller is missing from this build.
    #[error("this build has no built-in generic placement controller")]
    Builtin,
    /// The built-in generic placement controller does not load.
    #[error("the built-in generic placement controller does not load")]
    Generic(#[source] wasmco_runtime::RegistrationError),
    /// Deployments could not be taken up again.
    #[error("cannot resume deployments")]
    Resume(#[source] wasmco_rsync::RsyncError),
    /// The cluster deploys a stopped host was running could not be resumed.
    #[error("cannot resume cluster deploys")]
    ResumeDeploys(#[source] wasmco_orchestrator::OrchestratorError),
    /// The server stopped with an error.
    #[error("server failed")]
    Io(#[from] std::io::Error),
    /// The TLS set-up failed.
    #[error("cannot set up TLS")]
    Tls(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The master key is wrong or unreadable.
    #[error(transparent)]
    MasterKey(#[from] wasmco_store::secrets::SecretError),
    /// The shared store's secrets are sealed under another master key.
    #[error(
        "the store's secrets are sealed under another master key: every host sharing a \
         store needs the same one (point WASMCO_MASTER_KEY_FILE at a copy of the first \
         host's DATA_DIR/master.key)"
    )]
    SharedMasterKey,
    /// The store holds sealed secrets and no master key was given.
    #[error(
        "this data directory's secrets are sealed and there is no master key: set \
         WASMCO_MASTER_KEY or put the key in {}", file.display()
    )]
    NoMasterKey {
        /// Where the key was looked for.
        file: std::path::PathBuf,
    },
}
