//! The `wasmco` binary's library half: the client verbs and the server's
//! start-up, which wire the layer crates together (see docs/architecture.md's Layout).

pub mod cli;
pub mod startup;
pub mod telemetry;
