//! Start-up: the composition root. Opens the data directory (master key,
//! store, compile cache, admin token, audit log), wires the runtime, the
//! orchestrator and rsync together, checks what is stored against this
//! host's policies, and serves the router the API builds from the result.
//! The API itself only gets a ready [`AppState`].

mod error;
mod keys;
mod options;
mod serve;
mod state;

pub use error::ServeError;
pub use keys::{ADMIN_TOKEN_FILE, AUDIT_LOG_FILE};
pub use options::{EtcdAccess, HostIdentity, HostOptions, StoreLocation};
pub use serve::{TLS_CA_FILE, bind, serve, serve_metrics, serve_tls, tls_config};
pub use state::open_state;
