//! DIG actions (`approve`, `instantiate`, `update`, `rollback`, `terminate`)
//! and reading back the computed context.

mod actions;
mod context;
mod dig;
mod rollout;
mod status;

pub use actions::act;
pub use context::{ContextQuery, context};
pub use dig::DigPath;
pub use rollout::{ROLLOUT_ACTIONS, act_on_rollout, rollout};
pub use status::{StatusQuery, status, status_body};
pub use wasmco_core::wire::DigAction;
