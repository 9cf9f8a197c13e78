//! What every handler shares.

use wasmco_orchestrator::{ControllerRegistry, Orchestrator};
use wasmco_runtime::Runtime;
use wasmco_store::db::ResourceDb;

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
    /// The admin's bearer token (the one tools on this host present).
    pub admin_token: std::sync::Arc<str>,
    /// Every token the API accepts.
    pub tokens: std::sync::Arc<super::auth::Tokens>,
    /// Where every request is recorded.
    pub audit: super::auth::AuditLog,
    /// What a cluster's kubeconfig may ask of this host.
    pub kubeconfigs: std::sync::Arc<wasmco_pki::kubeconfig::KubeconfigPolicy>,
    /// Where users' bytes are parsed and checked, off the async workers.
    pub work: super::work::WorkPool,
    /// This host among those sharing its store.
    pub hosts: std::sync::Arc<dyn wasmco_store::hosts::HostGroup>,
    /// What `/metrics` reports.
    pub metrics: std::sync::Arc<super::metrics::Metrics>,
    /// The steps after a deploy, the failover watch and the rollout
    /// driver, which work for as long as they are kept here.
    pub background: std::sync::Arc<wasmco_orchestrator::Background>,
}
