//! The bodies of the API's resources and their validation.
//!
//! Every resource is EMCO's `{"metadata": {...}, "spec": {...}}` (a cluster
//! label is `{"clusterLabel": "…"}`). The spec of each kind is checked against
//! its own type; what it names elsewhere (an app, a controller, a profile) is
//! returned as references, which the database checks and records so that the
//! referenced resource cannot be deleted underneath.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "text"
    )]
    pub description: Option<String>,
    /// Free text for the user.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "text"
    )]
    pub user_data1: Option<String>,
    /// Free text for the user.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "text"
    )]
    pub user_data2: Option<String>,
}

/// A text field that may be left out but, when given, is a string: `null`
/// is refused, as the schema says.
fn text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    String::deserialize(deserializer).map(Some)
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
pub(crate) fn from_value<T: DeserializeOwned>(
    value: &Value,
    prefix: &str,
) -> Result<T, FieldError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_field_is_left_out_or_a_string_never_null() {
        let doc = parse_document(br#"{"metadata": {"name": "a"}}"#, "body").unwrap();
        assert_eq!(doc.metadata.user_data2, None);
        let error = parse_document(br#"{"metadata": {"name": "a", "userData2": null}}"#, "body")
            .unwrap_err();
        assert_eq!(error.field, "metadata.userData2");
    }
}
