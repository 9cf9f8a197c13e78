//! The AppContext: the worked-out deployment of a composite app.

pub mod budget;
pub mod draft;
pub mod handoff;
pub mod stored;

pub use crate::model::resource::{self, ManifestError, Resource, ResourceKey};
pub use budget::EditLimits;
pub use draft::{
    AppDraft, ClusterIndex, ClusterInfo, DraftContext, EditError, Override, PlacedCluster,
};
pub use handoff::{ContextHandoff, NoSync, SyncEngine};
pub use stored::{ContextMeta, ContextStore, DeployState, DigState, StoredContext};
