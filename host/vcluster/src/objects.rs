//! A virtual cluster's objects and the rules the Kubernetes API server
//! applies to them: names, namespaces, uid, resourceVersion, generation,
//! creationTimestamp, label selectors, and the four kinds of patch.

mod admission;
mod apply;
mod error;
mod fields;
mod model;
mod selector;
mod store;

pub use error::KubeError;
pub use fields::FieldOwners;
pub use model::{Event, PatchKind};
pub use selector::Selector;
pub use store::Objects;

#[cfg(test)]
mod tests;
