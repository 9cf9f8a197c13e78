//! The REST API (`/v2`), EMCO's paths and bodies.

pub mod auth;
mod ca_certs;
mod cluster_deployments;
mod clusters;
mod deployments;
mod error;
mod gitops;
mod hosts;
mod intents;
mod logical_clouds;
pub mod metrics;
pub mod openapi;
mod overview;
mod pki;
mod resources;
mod routes;
mod server;
mod state;
mod tokens;
pub mod ui;
mod work;

pub use error::ApiError;
pub use server::{metrics_router, router};
pub use state::AppState;
pub use work::WorkPool;
