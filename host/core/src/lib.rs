//! The bottom layer of wasmco: the API's resource kinds and bodies, names,
//! files and manifests, and what a controller's registration says. Plain
//! data with serde; every other crate builds on it, and it builds on none of
//! them (no wasmtime, kube, sled or tokio).

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
