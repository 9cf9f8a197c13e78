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
    #[schemars(with = "ControllerKindSchema")]
    pub kind: ControllerKind,
    /// Lower runs first within its kind.
    #[serde(default)]
    pub priority: u32,
    /// Limits tighter than the host's.
    #[serde(default)]
    #[schemars(with = "LimitOverridesSchema")]
    pub limits: LimitOverrides,
}

impl Spec for ControllerSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        Ok(Vec::new())
    }
}

// `ControllerKind` and `LimitOverrides` are the runtime's data
// (`crate::controllers`) and derive no schema there yet; these stand for
// them in the document, and a test holds them to the same fields.

/// What kind of controller a component is.
#[derive(JsonSchema)]
#[schemars(rename = "ControllerKind", rename_all = "lowercase")]
#[expect(dead_code, reason = "a schema only, never built")]
enum ControllerKindSchema {
    /// Chooses clusters: the `placement-controller` world.
    Placement,
    /// Changes resources: the `action-controller` world.
    Action,
}

/// Limits a controller's registration asks for; unset fields keep the
/// host's, and a limit of zero would leave a controller nothing.
#[derive(JsonSchema)]
#[schemars(
    rename = "LimitOverrides",
    rename_all = "camelCase",
    deny_unknown_fields
)]
#[expect(dead_code, reason = "a schema only, never built")]
struct LimitOverridesSchema {
    /// Wall-clock budget of one call, in milliseconds.
    #[schemars(range(min = 1))]
    deadline_ms: Option<u64>,
    /// Cap on all of a call's linear memories together.
    #[schemars(range(min = 1))]
    memory_bytes: Option<u64>,
    /// Cap on core instances.
    #[schemars(range(min = 1))]
    instances: Option<u32>,
    /// Cap on tables.
    #[schemars(range(min = 1))]
    tables: Option<u32>,
    /// Cap on the elements of all tables together.
    #[schemars(range(min = 1))]
    table_elements: Option<u32>,
    /// How much of a call's output is kept.
    #[schemars(range(min = 1))]
    log_bytes: Option<u32>,
    /// Edits one call may return.
    #[schemars(range(min = 1))]
    max_edits: Option<u32>,
    /// Bytes of manifests one call's edits may produce.
    #[schemars(range(min = 1))]
    output_bytes: Option<u64>,
    /// Largest manifest an edit may produce.
    #[schemars(range(min = 1))]
    manifest_bytes: Option<u32>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn schema_of<T: JsonSchema>() -> serde_json::Value {
        schemars::SchemaGenerator::default()
            .root_schema_for::<T>()
            .to_value()
    }

    #[test]
    fn the_schemas_standing_for_the_runtimes_types_have_their_fields() {
        let all_set = LimitOverrides {
            deadline_ms: Some(1),
            memory_bytes: Some(1),
            instances: Some(1),
            tables: Some(1),
            table_elements: Some(1),
            log_bytes: Some(1),
            max_edits: Some(1),
            output_bytes: Some(1),
            manifest_bytes: Some(1),
        };
        let serde_json::Value::Object(fields) = serde_json::to_value(all_set).unwrap() else {
            panic!("limits are an object");
        };
        let schema = schema_of::<LimitOverridesSchema>();
        let documented = schema["properties"].as_object().unwrap();
        assert_eq!(
            fields.keys().collect::<BTreeSet<_>>(),
            documented.keys().collect::<BTreeSet<_>>()
        );
        let kinds = [ControllerKind::Placement, ControllerKind::Action]
            .map(|kind| serde_json::to_value(kind).unwrap());
        // Each variant is a `const` of its own, to carry its description.
        let documented: Vec<_> = schema_of::<ControllerKindSchema>()["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|variant| variant["const"].clone())
            .collect();
        assert_eq!(documented, kinds);
    }
}
