//! What acts on the DIGs by itself, beside the requests: the steps after a
//! deploy, the failover watch and the rollout driver. They listen to the
//! sync engine, so they start before rsync takes its work up, and stop
//! when the value [`Background::start`] gives is dropped.

use std::sync::Arc;

use crate::failover::FailoverWatch;
use crate::follow_ups::FollowUps;
use crate::orchestrator::Orchestrator;
use crate::rollout::RolloutDriver;

/// The orchestrator's own workers, kept alive together.
pub struct Background {
    _follow_ups: Arc<FollowUps>,
    _failover: Arc<FailoverWatch>,
    _rollouts: Arc<RolloutDriver>,
}

impl Background {
    /// Starts them for `orchestrator`.
    pub fn start(orchestrator: &Orchestrator) -> Background {
        Background {
            _follow_ups: FollowUps::start(orchestrator),
            _failover: FailoverWatch::start(orchestrator),
            _rollouts: RolloutDriver::start(orchestrator),
        }
    }
}
