//! A DIG's failover intent: what happens to its apps when a cluster they
//! are placed on stops answering.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checking::{Scope, Spec};
use crate::document::{FieldError, Reference};

/// The key of a DIG intent that names its failover intent.
pub const FAILOVER_KEY: &str = "failoverIntent";

/// The longest grace or healthy period taken: a week.
const LONGEST_SECONDS: u64 = 7 * 24 * 3600;

/// What to do when a placed cluster stays unreachable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FailoverPolicy {
    /// Nothing: the apps wait for the cluster to come back (EMCO's way).
    #[default]
    None,
    /// Placement runs again without the cluster; the apps are deployed on
    /// its choice and removed from the cluster once it answers again.
    Replace,
}

/// A failover intent's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FailoverIntentSpec {
    /// `none` (the default) or `replace`.
    #[serde(default)]
    pub policy: FailoverPolicy,
    /// How long a placed cluster stays unreachable before its apps move.
    #[serde(default = "default_grace")]
    #[schemars(range(min = 1, max = LONGEST_SECONDS))]
    pub grace_seconds: u64,
    /// How long a cluster that was unreachable must answer again before
    /// placement may choose it: what keeps a flapping cluster from
    /// bouncing apps.
    #[serde(default = "default_healthy")]
    #[schemars(range(max = LONGEST_SECONDS))]
    pub healthy_seconds: u64,
}

fn default_grace() -> u64 {
    60
}

fn default_healthy() -> u64 {
    300
}

impl Spec for FailoverIntentSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        if self.grace_seconds == 0 || self.grace_seconds > LONGEST_SECONDS {
            return Err(FieldError::new(
                "spec.graceSeconds",
                format!("must be from 1 to {LONGEST_SECONDS}"),
            ));
        }
        if self.healthy_seconds > LONGEST_SECONDS {
            return Err(FieldError::new(
                "spec.healthySeconds",
                format!("must be at most {LONGEST_SECONDS}"),
            ));
        }
        Ok(Vec::new())
    }
}

impl FailoverIntentSpec {
    /// Whether apps move off a cluster that stays unreachable.
    pub fn replaces(&self) -> bool {
        self.policy == FailoverPolicy::Replace
    }
}
