//! The `wasmco` command line.

pub mod scenario;
