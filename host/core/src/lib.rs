//! The bottom layer of wasmco: the API's resource kinds and bodies, names,
//! files and manifests, and what a controller's registration says. Plain
//! data with serde; every other crate builds on it, and it builds on none of
//! them (no wasmtime, kube, sled or tokio).

pub mod cloud;
pub mod controllers;
pub mod document;
pub mod eggo;
pub mod files;
pub mod hooks;
pub mod instrumentation;
pub mod intents;
pub mod kinds;
pub mod kube_names;
pub mod limits;
pub mod names;
pub mod network;
pub mod quantity;
pub mod resource;
pub mod specs;
pub mod tenancy;
pub mod tokens;
pub mod wire;

pub use document::{
    Document, FieldError, LabelBody, Metadata, Reference, check_name, parse_document, parse_json,
};
pub use kinds::{BodyShape, FileKind, Kind, KindInfo};
pub use resource::{ClusterInfo, ClusterRef, ManifestError, NodeInfo, Resource, ResourceKey};
pub use specs::{ControllerSpec, GENERIC_PLACEMENT_KEY, check_spec, read_body, read_spec};
