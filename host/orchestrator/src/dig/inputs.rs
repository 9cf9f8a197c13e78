//! Everything an instantiate reads from the resource database: the apps
//! and their rendered manifests, their order, the clusters, and the
//! controllers with their intents.

mod gather;
mod render;
mod steps;

pub(crate) use gather::{Inputs, Scope, Sources, gather};
pub(crate) use steps::builtin_intent;
