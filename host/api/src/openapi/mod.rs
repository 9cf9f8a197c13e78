//! The OpenAPI 3 document, generated from the same kind table that builds
//! the router, so a route cannot exist undocumented.

mod ca_certs;
mod cluster_deployments;
mod clusters;
mod declared;
mod deployments;
mod document;
mod hosts;
mod logical_clouds;
mod operations;
mod parts;
mod specs;
mod wire;

pub use document::{document, document_with};
pub use operations::operations;
