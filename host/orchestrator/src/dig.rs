//! Deployment intent groups: reading a DIG's inputs, building its
//! contexts by running its controllers, and moving it through its states.

mod build;
mod inputs;
mod lifecycle;
mod rollout;

pub(crate) use build::Build;
pub(crate) use inputs::Sources;
pub(crate) use lifecycle::Digs;
pub use rollout::RolloutAction;
