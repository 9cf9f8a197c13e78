//! The API's resource types: the kind table, bodies, names and files.

pub mod controllers;
pub mod document;
pub mod files;
pub mod kinds;
pub mod limits;
pub mod names;
pub mod resource;
pub mod tokens;

pub use document::{
    ControllerSpec, Document, FieldError, GENERIC_PLACEMENT_KEY, LabelBody, Metadata, Reference,
    check_name, check_spec, parse_document, parse_json,
};
pub use kinds::{BodyShape, FileKind, Kind, KindInfo};
pub use resource::{ClusterInfo, ManifestError, Resource, ResourceKey};
