//! The AppContext: the worked-out deployment of a composite app.

pub mod budget;
pub mod draft;
pub mod handoff;
pub mod resource;
pub mod stored;

pub use budget::EditLimits;
pub use draft::{
    AppDraft, ClusterIndex, ClusterInfo, DraftContext, EditError, Override, PlacedCluster,
};
pub use handoff::{ContextHandoff, NoSync, SyncEngine};
pub use resource::{ManifestError, Resource, ResourceKey};
pub use stored::{ContextMeta, ContextStore, DeployState, DigState, StoredContext};
