//! wasmco's integration tests: one binary, a module per concern.

mod contract;
mod hostile;
mod scenario;
mod support;
