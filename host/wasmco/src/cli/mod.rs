//! The `wasmco` command line: the client verbs that talk to the REST API,
//! the controller workflow, and the dev server.

pub mod apply;
pub mod client;
pub mod controller;
pub mod deploys;
pub mod dev;
pub mod eggops;
pub mod emcoctl;
mod error;
pub mod gate_fixture;
pub mod languages;
mod project;
pub mod resources;
mod rust;
pub mod scenario;
pub mod status;

pub use error::CliError;
