//! What every handler shares.

use crate::db::ResourceDb;
use crate::orchestrator::{ControllerRegistry, Orchestrator};
use crate::runtime::Runtime;

/// The server's shared state; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The resource database.
    pub db: ResourceDb,
    /// The controller sandbox.
    pub runtime: Runtime,
    /// Registered controllers, compiled and ready to call.
    pub controllers: ControllerRegistry,
    /// Instantiate, update, rollback and terminate of DIGs.
    pub orchestrator: Orchestrator,
    /// The bearer token every route but `/healthz` asks for.
    pub admin_token: std::sync::Arc<str>,
}
