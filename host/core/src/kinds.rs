//! The resources of the API and where they live: one table drives the
//! routes, the store keys and the OpenAPI document.

mod kind;
mod routes;
mod table;

pub use kind::Kind;
pub use table::{BodyShape, COMPONENT_LIMIT, FileKind, KindInfo, MANIFESTS_LIMIT};
