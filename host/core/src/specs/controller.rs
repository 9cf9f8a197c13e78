//! A controller's registration body.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checking::{Scope, Spec};
use crate::controllers::{ControllerKind, LimitOverrides};
use crate::document::{FieldError, Reference};

/// A controller's spec: EMCO's, without host and port, plus limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControllerSpec {
    /// Placement or action.
    #[serde(rename = "type")]
    pub kind: ControllerKind,
    /// Lower runs first within its kind.
    #[serde(default)]
    pub priority: u32,
    /// Limits tighter than the host's.
    #[serde(default)]
    pub limits: LimitOverrides,
}

impl Spec for ControllerSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        Ok(Vec::new())
    }
}
