//! wasmco's integration tests: one binary, a module per concern.

mod api;
mod contract;
mod hostile;
mod scenario;
mod support;
