//! The bodies of the API's resources and their validation.
//!
//! Every resource is EMCO's `{"metadata": {...}, "spec": {...}}` (a cluster
//! label is `{"clusterLabel": "…"}`). The spec of each kind is checked against
//! its own type; what it names elsewhere (an app, a controller, a profile) is
//! returned as references, which the database checks and records so that the
//! referenced resource cannot be deleted underneath.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::controllers::{ControllerKind, LimitOverrides};
use super::kinds::Kind;
use super::names::{NAME_RULE, is_valid_name};

/// A request body the API refuses, with the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FieldError {
    /// Dotted path of the field, e.g. `spec.app`.
    pub field: String,
    /// Why it is refused.
    pub reason: String,
}

impl FieldError {
    /// An error for `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// EMCO's metadata block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// The resource's name (EMCO's naming rule).
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Free text for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data1: Option<String>,
    /// Free text for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data2: Option<String>,
}

/// A resource as stored and returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Name and descriptions.
    pub metadata: Metadata,
    /// The kind's own fields.
    #[serde(default = "empty_object")]
    pub spec: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A cluster label's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelBody {
    /// The label.
    pub cluster_label: String,
}

/// A resource a body names: its kind and full path, and the field naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The field of the body that names it.
    pub field: String,
    /// The referenced kind.
    pub kind: Kind,
    /// Its path values (ancestors and own name).
    pub path: Vec<String>,
}

/// Parses a JSON object into `T`, naming the field at fault; bad syntax or a
/// body that is not an object names `root`.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8], root: &str) -> Result<T, FieldError> {
    typed(json_object(bytes, root)?, root)
}

fn json_object(bytes: &[u8], root: &str) -> Result<serde_json::Map<String, Value>, FieldError> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(FieldError::new(root, "must be a JSON object")),
        Err(e) => Err(FieldError::new(root, format!("not valid JSON: {e}"))),
    }
}

/// A body's object as `T`: fields are named by their path in the body, the
/// body itself by `root`.
fn typed<T: DeserializeOwned>(
    object: serde_json::Map<String, Value>,
    root: &str,
) -> Result<T, FieldError> {
    from_value(&Value::Object(object), "").map_err(|e| {
        let field = if e.field.is_empty() {
            root.to_owned()
        } else {
            e.field
        };
        FieldError::new(field, e.reason)
    })
}

/// Parses a resource document. A `status` block, which the API adds to what
/// it returns, is ignored, so a body read with GET can be sent back with PUT.
pub fn parse_document(bytes: &[u8], root: &str) -> Result<Document, FieldError> {
    let mut object = json_object(bytes, root)?;
    object.remove("status");
    typed(object, root)
}

/// `value` as `T`; errors name the field by its path under `prefix`
/// (`prefix` alone for the value itself).
fn from_value<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = match (path.as_str(), prefix.is_empty()) {
            ("" | ".", _) => prefix.to_owned(),
            (_, true) => path,
            (_, false) => format!("{prefix}.{path}"),
        };
        FieldError::new(field, e.into_inner().to_string())
    })
}

/// Checks a name against EMCO's rule.
pub fn check_name(field: &str, name: &str) -> Result<(), FieldError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!("{name:?} is not a valid name: {NAME_RULE}"),
        ))
    }
}

/// A controller's spec: EMCO's, without host and port, plus limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// A logical cloud's spec (EMCO's dcm): its namespace and user.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalCloudSpec {
    /// The namespace made in every referenced cluster.
    pub namespace: String,
    /// The user given access to it.
    pub user: LogicalCloudUser,
}

/// A logical cloud's user.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalCloudUser {
    /// The certificate's common name: the Kubernetes user.
    pub user_name: String,
}

/// A logical cloud's reference to a cluster.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterReferenceSpec {
    /// The cluster's provider.
    pub cluster_provider: String,
    /// The cluster.
    pub cluster: String,
}

/// One rule of a logical cloud user's Role.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserPermissionSpec {
    /// The namespace it applies to (the logical cloud's when left out).
    #[serde(default, skip_serializing)]
    pub namespace: Option<String>,
    /// API groups (`""` is the core group).
    #[serde(default)]
    pub api_groups: Vec<String>,
    /// Resources.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Verbs.
    pub verbs: Vec<String>,
}

/// A Kubernetes DNS-1123 label (namespace names).
fn check_dns_label(field: &str, value: &str) -> Result<(), FieldError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!(
                "{value:?} is not a Kubernetes namespace name (lower-case letters, digits, '-', at most 63)"
            ),
        ))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CompositeAppSpec {
    composite_app_version: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KvPairSpec {
    kv: Vec<BTreeMap<String, Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DependencySpec {
    app: String,
    #[serde(default)]
    op_status: OpStatus,
    #[serde(default)]
    #[allow(dead_code)]
    wait: u64,
}

#[derive(Deserialize, Default)]
enum OpStatus {
    #[default]
    Ready,
    Deployed,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AppProfileSpec {
    app: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DigSpec {
    composite_profile: String,
    #[allow(dead_code)]
    version: String,
    #[serde(default)]
    override_values: Vec<OverrideValues>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideValues {
    app: String,
    #[allow(dead_code)]
    values: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DigIntentSpec {
    intent: BTreeMap<String, String>,
}

/// The key of a DIG intent that names its generic placement intent.
pub const GENERIC_PLACEMENT_KEY: &str = "genericPlacementIntent";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppIntentSpec {
    app: String,
    intent: PlacementIntent,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlacementIntent {
    #[serde(default)]
    all_of: Vec<PlacementEntry>,
    #[serde(default)]
    any_of: Vec<PlacementEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlacementEntry {
    cluster_provider: Option<String>,
    cluster: Option<String>,
    cluster_label: Option<String>,
    any_of: Option<Vec<PlacementEntry>>,
}

impl PlacementEntry {
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

/// Checks `doc`'s spec for `kind` (whose parent path is `parent`) and returns
/// the resources it names.
pub fn check_spec(
    kind: Kind,
    parent: &[String],
    doc: &Document,
) -> Result<Vec<Reference>, FieldError> {
    if !doc.spec.is_object() {
        return Err(FieldError::new("spec", "must be an object"));
    }
    let spec = &doc.spec;
    // The composite app version path of resources under a composite app.
    let app_path = |app: &str| {
        let mut path = parent[..3].to_vec();
        path.push(app.to_owned());
        path
    };
    let mut refs = Vec::new();
    match kind {
        Kind::Controller => {
            if spec.get("host").is_some() || spec.get("port").is_some() {
                return Err(FieldError::new(
                    "spec.host",
                    "wasmco controllers are uploaded as .wasm components, not reached at host and port",
                ));
            }
            from_value::<ControllerSpec>(spec, "spec")?;
        }
        Kind::CompositeApp => {
            let s: CompositeAppSpec = from_value(spec, "spec")?;
            check_name("spec.compositeAppVersion", &s.composite_app_version)?;
        }
        Kind::ClusterKvPair => {
            let s: KvPairSpec = from_value(spec, "spec")?;
            for (i, pair) in s.kv.iter().enumerate() {
                for (key, value) in pair {
                    if !value.is_string() {
                        return Err(FieldError::new(
                            format!("spec.kv[{i}].{key}"),
                            "values are strings",
                        ));
                    }
                }
            }
        }
        Kind::AppDependency => {
            let s: DependencySpec = from_value(spec, "spec")?;
            let _ = s.op_status;
            check_name("spec.app", &s.app)?;
            refs.push(Reference {
                field: "spec.app".into(),
                kind: Kind::App,
                path: app_path(&s.app),
            });
        }
        Kind::AppProfile => {
            let s: AppProfileSpec = from_value(spec, "spec")?;
            check_name("spec.app", &s.app)?;
            refs.push(Reference {
                field: "spec.app".into(),
                kind: Kind::App,
                path: app_path(&s.app),
            });
        }
        Kind::DeploymentIntentGroup => {
            let s: DigSpec = from_value(spec, "spec")?;
            check_name("spec.compositeProfile", &s.composite_profile)?;
            refs.push(Reference {
                field: "spec.compositeProfile".into(),
                kind: Kind::CompositeProfile,
                path: app_path(&s.composite_profile),
            });
            for (i, values) in s.override_values.iter().enumerate() {
                let field = format!("spec.overrideValues[{i}].app");
                check_name(&field, &values.app)?;
                refs.push(Reference {
                    field,
                    kind: Kind::App,
                    path: app_path(&values.app),
                });
            }
        }
        Kind::DigIntent => {
            let s: DigIntentSpec = from_value(spec, "spec")?;
            for (controller, intent) in &s.intent {
                let field = format!("spec.intent.{controller}");
                check_name(&field, intent)?;
                if controller == GENERIC_PLACEMENT_KEY {
                    let mut path = parent.to_vec();
                    path.push(intent.clone());
                    refs.push(Reference {
                        field,
                        kind: Kind::GenericPlacementIntent,
                        path,
                    });
                } else {
                    check_name(&format!("spec.intent (key {controller:?})"), controller)?;
                    refs.push(Reference {
                        field: field.clone(),
                        kind: Kind::Controller,
                        path: vec![controller.clone()],
                    });
                    let mut path = parent.to_vec();
                    path.push(intent.clone());
                    refs.push(Reference {
                        field,
                        kind: Kind::ControllerIntent,
                        path,
                    });
                }
            }
        }
        Kind::GenericAppIntent => {
            let s: AppIntentSpec = from_value(spec, "spec")?;
            check_name("spec.app", &s.app)?;
            for (i, entry) in s.intent.all_of.iter().enumerate() {
                entry.check(&format!("spec.intent.allOf[{i}]"), false)?;
            }
            for (i, entry) in s.intent.any_of.iter().enumerate() {
                entry.check(&format!("spec.intent.anyOf[{i}]"), true)?;
            }
            if s.intent.all_of.is_empty() && s.intent.any_of.is_empty() {
                return Err(FieldError::new("spec.intent", "needs allOf or anyOf"));
            }
            refs.push(Reference {
                field: "spec.app".into(),
                kind: Kind::App,
                path: app_path(&s.app),
            });
        }
        Kind::LogicalCloud => {
            let s: LogicalCloudSpec = from_value(spec, "spec")?;
            check_dns_label("spec.namespace", &s.namespace)?;
            if s.user.user_name.is_empty()
                || s.user.user_name.len() > 253
                || s.user.user_name.chars().any(|c| c.is_control() || c == '/')
            {
                return Err(FieldError::new(
                    "spec.user.userName",
                    "must be 1 to 253 characters, without '/' or control characters",
                ));
            }
        }
        Kind::LogicalCloudClusterReference => {
            let s: ClusterReferenceSpec = from_value(spec, "spec")?;
            check_name("spec.clusterProvider", &s.cluster_provider)?;
            check_name("spec.cluster", &s.cluster)?;
            refs.push(Reference {
                field: "spec.cluster".into(),
                kind: Kind::Cluster,
                path: vec![s.cluster_provider, s.cluster],
            });
        }
        Kind::LogicalCloudUserPermission => {
            let s: UserPermissionSpec = from_value(spec, "spec")?;
            if s.verbs.is_empty() {
                return Err(FieldError::new("spec.verbs", "needs at least one verb"));
            }
        }
        Kind::LogicalCloudQuota => {
            let s: BTreeMap<String, Value> = from_value(spec, "spec")?;
            for (key, value) in &s {
                if !value.is_string() {
                    return Err(FieldError::new(
                        format!("spec.{key}"),
                        "quantities are strings (\"10\", \"4Gi\")",
                    ));
                }
            }
        }
        Kind::ClusterProvider
        | Kind::Cluster
        | Kind::ClusterLabel
        | Kind::Project
        | Kind::App
        | Kind::CompositeProfile
        | Kind::GenericPlacementIntent
        | Kind::ControllerIntent => {}
    }
    Ok(refs)
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any bytes: a document or a refusal naming a field, never a panic.
        #[test]
        fn any_body_is_a_document_or_a_field_error(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
            if let Err(error) = parse_document(&bytes, "body") {
                prop_assert!(!error.field.is_empty());
            }
        }

        /// JSON nested past serde_json's limit is refused, not recursed into.
        #[test]
        fn deep_json_is_refused(depth in 129usize..20_000) {
            let text = format!("{{\"metadata\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
            prop_assert!(parse_document(text.as_bytes(), "body").is_err());
        }

        /// Documents with any name and spec come back as sent.
        #[test]
        fn documents_round_trip(name in "[a-zA-Z0-9][a-zA-Z0-9._-]{0,20}", key in "[a-z]{1,8}", value in any::<i64>()) {
            let body = serde_json::json!({"metadata": {"name": name}, "spec": {key.clone(): value}});
            let document = parse_document(body.to_string().as_bytes(), "body").unwrap();
            prop_assert_eq!(&document.metadata.name, &name);
            prop_assert_eq!(&document.spec[&key], &serde_json::json!(value));
        }
    }
}
