//! What a controller's registration says about it: its kind and the limits
//! it asks for. The runtime gives these meaning; here they are data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Edits one controller call may return, unless the host or the
/// registration says otherwise.
pub const DEFAULT_MAX_EDITS: u32 = 10_000;
/// Bytes of manifests one call's edits may produce, by default.
pub const DEFAULT_OUTPUT_BYTES: u64 = 512 << 20;
/// The largest manifest an edit may produce, by default.
pub const DEFAULT_MANIFEST_BYTES: u32 = 4 << 20;

/// What kind of controller a component is, and so which world it implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ControllerKind {
    /// Chooses clusters: the `placement-controller` world.
    Placement,
    /// Changes resources: the `action-controller` world.
    Action,
    /// Lets a rollout's next group go, or not: the `gate-controller` world.
    Gate,
}

impl ControllerKind {
    /// The WIT world a component of this kind implements.
    pub fn world(self) -> &'static str {
        match self {
            ControllerKind::Placement => "placement-controller",
            ControllerKind::Action => "action-controller",
            ControllerKind::Gate => "gate-controller",
        }
    }
}

impl std::fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ControllerKind::Placement => "placement",
            ControllerKind::Action => "action",
            ControllerKind::Gate => "gate",
        })
    }
}

/// Limits a controller's registration asks for; unset fields keep the
/// host's, and a limit of zero would leave a controller nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitOverrides {
    /// Wall-clock budget of one call, in milliseconds.
    #[schemars(range(min = 1))]
    pub deadline_ms: Option<u64>,
    /// Cap on all of a call's linear memories together.
    #[schemars(range(min = 1))]
    pub memory_bytes: Option<u64>,
    /// Cap on core instances.
    #[schemars(range(min = 1))]
    pub instances: Option<u32>,
    /// Cap on tables.
    #[schemars(range(min = 1))]
    pub tables: Option<u32>,
    /// Cap on the elements of all tables together.
    #[schemars(range(min = 1))]
    pub table_elements: Option<u32>,
    /// How much of a call's output is kept.
    #[schemars(range(min = 1))]
    pub log_bytes: Option<u32>,
    /// Edits one call may return.
    #[schemars(range(min = 1))]
    pub max_edits: Option<u32>,
    /// Bytes of manifests one call's edits may produce.
    #[schemars(range(min = 1))]
    pub output_bytes: Option<u64>,
    /// Largest manifest an edit may produce.
    #[schemars(range(min = 1))]
    pub manifest_bytes: Option<u32>,
}
