//! The sandbox controllers run in, and the host side of their [`contract`].
//!
//! One [`Runtime`] (one wasmtime engine) serves the whole process. A controller
//! is compiled once when it is registered, cached on disk by content hash, and
//! pre-instantiated; a call then costs a fresh store and an instantiation.
//! Every call runs under a deadline, a memory cap and instance/table caps, and
//! sees no file system, network, environment or clock.

pub mod builtin;
mod cache;
mod compiled_file;
pub mod contract;
mod controller;
mod engine;
mod error;
pub mod helm;
mod limits;
mod loader;
mod log;
pub mod metrics;
mod precheck;
mod sandbox;

pub use cache::{CompilerProcess, DEFAULT_COMPILE_TIMEOUT, compile_to_file};
pub use controller::{CallOutput, Controller, kind_exported_by};
pub use error::{CallError, CallFailure, RegistrationError, RuntimeError};
pub use limits::{ControllerLimits, LimitOverrides};
pub use loader::{Runtime, RuntimeConfig};
pub use log::ControllerLog;
pub use precheck::{CodeLimits, declared_intents};
pub use wasmco_core::controllers::ControllerKind;
