//! The AppContext: the worked-out deployment of a composite app.

pub mod draft;
pub mod resource;

pub use draft::{
    AppDraft, ClusterIndex, ClusterInfo, DraftContext, EditError, Override, PlacedCluster,
};
pub use resource::{ManifestError, Resource, ResourceKey};
