//! The verbs of the `wasmco` binary, each a module with its own clap
//! arguments and its own `run`; `main` only parses and dispatches.

pub mod cluster;
mod cluster_repo;
pub mod compile;
mod connect;
pub mod controller;
pub mod dev;
pub mod dig;
pub mod documents;
pub mod get;
pub mod helm;
pub mod rollout;
pub mod scenario;
pub mod serve;
pub mod token;
pub mod virtual_cluster;

pub use connect::Connect;
