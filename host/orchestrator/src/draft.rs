//! An AppContext being worked out: what controllers see and change.
//!
//! Each app keeps its manifests once (its base); a cluster whose resources
//! differ keeps only the resources that differ, by key: a changed or added
//! manifest, or a removal. A thousand clusters running the same app hold one
//! copy of its manifests.
//!
//! Controllers' edits are checked first and applied all or none: a batch that
//! fails leaves the draft exactly as it was.

mod actions;
mod context;
mod model;
mod patch;
mod placement;
mod requests;

pub use context::DraftContext;
pub use model::{AppDraft, ClusterIndex, ClusterNodes, EditError, Override, PlacedCluster};
pub use wasmco_core::{ClusterInfo, NodeInfo};

#[cfg(test)]
mod tests;
