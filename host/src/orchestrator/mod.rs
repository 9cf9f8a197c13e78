//! Runs the controllers of a deployment over its AppContext.

pub mod pipeline;

pub use pipeline::{ControllerRun, Step, run_controllers};
