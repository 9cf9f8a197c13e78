//! DIG actions (`approve`, `instantiate`, `update`, `rollback`, `terminate`)
//! and reading back the computed context.

mod actions;
mod context;
mod dig;
mod status;

pub use actions::act;
pub use context::{ContextQuery, context};
pub use dig::DigPath;
pub use status::{StatusQuery, status, status_body};
pub use wasmco_core::wire::DigAction;
