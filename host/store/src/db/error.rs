//! Why a database operation was refused or failed.

use super::id::ResourceId;
use crate::error::StoreError;

/// Why a database operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The resource does not exist.
    #[error("{} not found", .0.describe())]
    NotFound(ResourceId),
    /// The resource it would live under does not exist.
    #[error("{} not found", .0.describe())]
    ParentNotFound(ResourceId),
    /// A resource of that name exists.
    #[error("{} already exists", .0.describe())]
    AlreadyExists(ResourceId),
    /// A resource the body names does not exist.
    #[error("{field}: {} not found", .target.describe())]
    ReferenceNotFound {
        /// The field naming it.
        field: String,
        /// What it names.
        target: ResourceId,
    },
    /// Other resources name it.
    #[error("{} is in use by {}", .target.describe(), .by.join(", "))]
    InUse {
        /// What was to be deleted.
        target: ResourceId,
        /// What refers to it.
        by: Vec<String>,
    },
    /// Resources live under it.
    #[error("{} still has {}; delete them first", .target.describe(), .children.join(", "))]
    HasChildren {
        /// What was to be deleted.
        target: ResourceId,
        /// What lives under it.
        children: Vec<String>,
    },
    /// A stored body is not JSON (the store was changed behind our back).
    #[error("stored {} is corrupt: {reason}", .id.describe())]
    Corrupt {
        /// The resource.
        id: ResourceId,
        /// What is wrong.
        reason: String,
    },
    /// Other hosts kept writing between this write's checks and its batch.
    #[error("the database is busy with other hosts' writes; try again")]
    Busy,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A sealed value does not open under this master key.
    #[error("a sealed secret does not open: {0}")]
    Sealed(crate::secrets::SecretError),
}
