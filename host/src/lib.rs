//! wasmco: a multi-cluster application orchestrator on the model of EMCO,
//! whose placement and action controllers are sandboxed WebAssembly
//! components.
//!
//! Data flows one way: the API and CLI hand deployments to the
//! [`orchestrator`], which builds an [`appcontext`] by calling controllers
//! through the [`runtime`]; the controllers speak the [`contract`] in `wit/`.

pub mod api;
pub mod appcontext;
pub mod builtin;
pub mod cli;
pub mod contract;
pub mod db;
pub mod kubeconfig;
pub mod model;
pub mod orchestrator;
pub mod pki;
pub mod rsync;
pub mod runtime;
pub mod secrets;
pub mod startup;
pub mod store;
pub use wasmco_vcluster as vcluster;
