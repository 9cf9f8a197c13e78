//! A deployment intent group and the intents it picks.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::checking::{Scope, Spec};
use super::patterns::{NAME_OR_EMPTY_PATTERN, NAME_PATTERN};
use crate::document::{FieldError, Reference, check_name};
use crate::kinds::Kind;

/// The key of a DIG intent that names its generic placement intent.
pub const GENERIC_PLACEMENT_KEY: &str = "genericPlacementIntent";

/// A deployment intent group's spec.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DigSpec {
    /// The composite profile whose app profiles render the apps.
    #[schemars(pattern(NAME_PATTERN))]
    pub composite_profile: String,
    /// The release: EMCO's DIG `version`.
    pub version: String,
    /// Values applied after the profiles', per app.
    #[serde(default)]
    pub override_values: Vec<OverrideValues>,
    /// The logical cloud it deploys to (its namespace is a chart's
    /// release namespace).
    #[serde(default)]
    #[schemars(pattern(NAME_OR_EMPTY_PATTERN))]
    pub logical_cloud: Option<String>,
}

impl Spec for DigSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.compositeProfile", &self.composite_profile)?;
        let mut refs = vec![scope.in_version(
            "spec.compositeProfile",
            Kind::CompositeProfile,
            &self.composite_profile,
        )];
        for (i, values) in self.override_values.iter().enumerate() {
            let field = format!("spec.overrideValues[{i}].app");
            check_name(&field, &values.app)?;
            refs.push(scope.app(field, &values.app));
        }
        // EMCO's ref-schemas check the logical cloud at create too (whether
        // it is instantiated is checked at instantiate).
        if let Some(cloud) = self.logical_cloud.as_deref().filter(|c| !c.is_empty()) {
            check_name("spec.logicalCloud", cloud)?;
            refs.push(Reference {
                field: "spec.logicalCloud".into(),
                kind: Kind::LogicalCloud,
                path: vec![scope.parent[0].clone(), cloud.to_owned()],
            });
        }
        Ok(refs)
    }
}

/// One app's override values in a DIG.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverrideValues {
    /// The app.
    #[schemars(pattern(NAME_PATTERN))]
    pub app: String,
    /// For a plain-manifest app, `Kind/name` to an RFC 7386 merge patch
    /// for that resource; for a chart, Helm `--set` values
    /// (`"image.tag": "1.2"`).
    pub values: serde_json::Map<String, Value>,
}

/// What emcoctl (Go's templates) writes for a value its values file does
/// not set. EMCO's sfc examples leave their controllers' intent names unset,
/// as sfc and sfcclient read every intent of their kinds whatever the name.
pub const UNSET_INTENT_NAME: &str = "<no value>";

/// A DIG intent: which intent of each controller the DIG uses.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DigIntentSpec {
    /// Controller name (or [`GENERIC_PLACEMENT_KEY`],
    /// [`super::FAILOVER_KEY`], [`super::ROLLOUT_KEY`]) to intent name.
    /// An intent's name is a name, or what emcoctl writes for one unset.
    #[schemars(extend("additionalProperties" = {"anyOf": [
        {"type": "string", "pattern": NAME_PATTERN},
        {"type": "string", "enum": [UNSET_INTENT_NAME]},
    ]}))]
    pub intent: BTreeMap<String, String>,
}

impl Spec for DigIntentSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        let mut refs = Vec::new();
        for (controller, intent) in &self.intent {
            let field = format!("spec.intent.{controller}");
            if intent != UNSET_INTENT_NAME {
                check_name(&field, intent)?;
            }
            // As EMCO: the controllers named must exist; the intents they
            // name are looked up at instantiate (EMCO's files create them
            // after this document).
            if ![
                GENERIC_PLACEMENT_KEY,
                super::FAILOVER_KEY,
                super::ROLLOUT_KEY,
            ]
            .contains(&controller.as_str())
            {
                check_name(&format!("spec.intent (key {controller:?})"), controller)?;
                refs.push(Reference {
                    field,
                    kind: Kind::Controller,
                    path: vec![controller.clone()],
                });
            }
        }
        Ok(refs)
    }
}
