//! A generic placement intent's entry: which clusters get an app.

use schemars::{JsonSchema, Schema, json_schema};
use serde::Deserialize;

use super::checking::{Scope, Spec};
use super::patterns::NAME_PATTERN;
use crate::document::{FieldError, Reference, check_name};
use crate::kinds::Kind;

/// A generic placement intent's entry for one app.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppIntentSpec {
    /// The app.
    #[schemars(pattern(NAME_PATTERN))]
    pub app: String,
    /// Where it goes.
    pub intent: PlacementIntent,
}

impl Spec for AppIntentSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.app", &self.app)?;
        for (i, entry) in self.intent.all_of.iter().enumerate() {
            entry.check(&format!("spec.intent.allOf[{i}]"), false)?;
        }
        for (i, entry) in self.intent.any_of.iter().enumerate() {
            entry.check(&format!("spec.intent.anyOf[{i}]"), true)?;
        }
        if self.intent.all_of.is_empty() && self.intent.any_of.is_empty() {
            return Err(FieldError::new("spec.intent", "needs allOf or anyOf"));
        }
        // As EMCO's ref-schemas have it: the clusters (and providers) an
        // intent names exist when it is made.
        let mut references = vec![scope.app("spec.app", &self.app)];
        let entries = |list: &[PlacementEntry], name: &str| {
            list.iter()
                .enumerate()
                .flat_map(|(i, entry)| entry.references(&format!("spec.intent.{name}[{i}]")))
                .collect::<Vec<_>>()
        };
        references.extend(entries(&self.intent.all_of, "allOf"));
        references.extend(entries(&self.intent.any_of, "anyOf"));
        Ok(references)
    }
}

/// EMCO's placement intent: clusters every one of which gets the app, and
/// clusters one of which does.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// The check wants one of the two.
#[schemars(extend("minProperties" = 1))]
pub struct PlacementIntent {
    /// Each entry gets the app.
    #[serde(default)]
    pub all_of: Vec<PlacementEntry>,
    /// One entry gets the app.
    #[serde(default)]
    pub any_of: Vec<PlacementEntry>,
}

/// A cluster by name or label, or a nested anyOf group.
// The fields are optional to the type so that the check can name the one
// at fault; the schema says which go together.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = selector_or_group)]
pub struct PlacementEntry {
    /// The provider of the cluster(s).
    #[serde(default)]
    #[schemars(with = "String", pattern(NAME_PATTERN))]
    pub cluster_provider: Option<String>,
    /// One cluster.
    #[serde(default)]
    #[schemars(with = "String", pattern(NAME_PATTERN))]
    pub cluster: Option<String>,
    /// The clusters with this label.
    #[serde(default)]
    #[schemars(with = "String", pattern(NAME_PATTERN))]
    pub cluster_label: Option<String>,
    /// A group of which one entry gets the app.
    #[serde(default)]
    pub any_of: Option<Vec<PlacementEntry>>,
}

/// What [`PlacementEntry::check`] holds an entry to, which no field's type
/// says: a cluster provider with exactly one of a cluster and a label, or
/// a group (`anyOf`) of such, which does not nest.
fn selector_or_group(schema: &mut Schema) {
    let mut selector = schema.clone();
    if let Some(properties) = selector
        .get_mut("properties")
        .and_then(|p| p.as_object_mut())
    {
        properties.remove("anyOf");
        // A field left out is not `null`, whatever the type reads it as.
        for property in properties.values_mut() {
            if let Some(property) = property.as_object_mut() {
                property.remove("default");
            }
        }
    }
    selector.insert("required".into(), serde_json::json!(["clusterProvider"]));
    let exactly_one = |one: &str, other: &str| serde_json::json!({"allOf": [selector, {"required": [one]}, {"not": {"required": [other]}}]});
    let selector = serde_json::json!({"oneOf": [
        exactly_one("cluster", "clusterLabel"),
        exactly_one("clusterLabel", "cluster"),
    ]});
    let group = serde_json::json!({"type": "object", "additionalProperties": false,
        "required": ["anyOf"],
        "properties": {"anyOf": {"type": "array", "items": selector}}});
    let description = schema.remove("description");
    *schema = json_schema!({"oneOf": [selector, group]});
    if let Some(description) = description {
        schema.insert("description".into(), description);
    }
}

impl PlacementEntry {
    /// The clusters (by name) and providers (of a label) it names.
    fn references(&self, field: &str) -> Vec<Reference> {
        if let Some(any_of) = &self.any_of {
            return any_of
                .iter()
                .enumerate()
                .flat_map(|(i, entry)| entry.references(&format!("{field}.anyOf[{i}]")))
                .collect();
        }
        let provider = self.cluster_provider.clone().unwrap_or_default();
        match &self.cluster {
            Some(cluster) => vec![Reference {
                field: format!("{field}.cluster"),
                kind: Kind::Cluster,
                path: vec![provider, cluster.clone()],
            }],
            None => vec![Reference {
                field: format!("{field}.clusterProvider"),
                kind: Kind::ClusterProvider,
                path: vec![provider],
            }],
        }
    }

    fn check(&self, field: &str, nested: bool) -> Result<(), FieldError> {
        if let Some(any_of) = &self.any_of {
            if nested {
                return Err(FieldError::new(
                    field,
                    "an anyOf may not nest another anyOf",
                ));
            }
            if self.cluster_provider.is_some()
                || self.cluster.is_some()
                || self.cluster_label.is_some()
            {
                return Err(FieldError::new(
                    field,
                    "an entry holds either anyOf or a cluster selector, not both",
                ));
            }
            for (i, entry) in any_of.iter().enumerate() {
                entry.check(&format!("{field}.anyOf[{i}]"), true)?;
            }
            return Ok(());
        }
        let provider = self
            .cluster_provider
            .as_deref()
            .ok_or_else(|| FieldError::new(format!("{field}.clusterProvider"), "is required"))?;
        check_name(&format!("{field}.clusterProvider"), provider)?;
        match (&self.cluster, &self.cluster_label) {
            (Some(_), Some(_)) => Err(FieldError::new(
                field,
                "names both cluster and clusterLabel; name one",
            )),
            (None, None) => Err(FieldError::new(
                field,
                "names neither cluster nor clusterLabel",
            )),
            (Some(name), None) => check_name(&format!("{field}.cluster"), name),
            (None, Some(label)) => check_name(&format!("{field}.clusterLabel"), label),
        }
    }
}
