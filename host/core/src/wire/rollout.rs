//! A progressive rollout as it goes: kept with the DIG's state, answered
//! by `GET …/{dig}/rollout` and shown by `wasmco rollout status`.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a rollout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RolloutPhase {
    /// Its released groups are being applied and waited Ready.
    Progressing,
    /// Someone paused it: no group goes until it is resumed.
    Paused,
    /// Too many clusters failed: no group goes until it is resumed or
    /// aborted.
    Stopped,
    /// Every group went.
    Done,
}

impl RolloutPhase {
    /// Whether groups may still go (or be held back).
    pub fn is_open(self) -> bool {
        self != RolloutPhase::Done
    }
}

impl fmt::Display for RolloutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RolloutPhase::Progressing => "Progressing",
            RolloutPhase::Paused => "Paused",
            RolloutPhase::Stopped => "Stopped",
            RolloutPhase::Done => "Done",
        })
    }
}

/// A rollout's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgress {
    /// The revision being rolled out.
    pub revision: u64,
    /// The revision current before it (0: an instantiate), which an abort
    /// goes back to.
    pub from: u64,
    /// How many groups there are.
    pub groups: u32,
    /// How many have been released to rsync (the first at once).
    pub released: u32,
    /// Where it is.
    pub phase: RolloutPhase,
    /// Why it stopped, paused or waits, for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the last group was released, RFC 3339.
    pub released_at: String,
    /// When the last group released was first seen Ready, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at: Option<String>,
}

impl RolloutProgress {
    /// A rollout of `revision` (from `from`) in `groups` groups, its first
    /// group released at `now`.
    pub fn started(revision: u64, from: u64, groups: usize, now: String) -> Self {
        RolloutProgress {
            revision,
            from,
            groups: u32::try_from(groups).unwrap_or(u32::MAX),
            released: 1,
            phase: if groups <= 1 {
                RolloutPhase::Done
            } else {
                RolloutPhase::Progressing
            },
            reason: None,
            released_at: now,
            ready_at: None,
        }
    }
}

/// `GET …/{dig}/rollout`: the progress and the groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The rollout, if the DIG's current revision has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutProgress>,
    /// Its groups, in order: each a list of `provider+cluster`.
    pub groups: Vec<Vec<String>>,
}
