//! Intent kinds a controller brings: what its `wasmco:intents` custom
//! section declares (see `sdk/src/intents.rs` for the guest's side).
//!
//! A declared kind lives under a deployment intent group, or under another
//! kind of the same controller, at `…/<segment>/{<param>}`, as EMCO's
//! controllers serve theirs. Its documents are stored as
//! [`Kind::Intent`](crate::Kind::Intent) with the segments in the path:
//! `[project, compositeApp, version, dig, segment, name, (segment, name)…]`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::FieldError;

/// The name of the custom section a controller declares its kinds in.
pub const SECTION: &str = "wasmco:intents";

/// Segments under a deployment intent group that wasmco serves itself.
pub const RESERVED_SEGMENTS: &[&str] = &[
    "intents",
    "generic-placement-intents",
    "controller-intents",
    "approve",
    "instantiate",
    "terminate",
    "stop",
    "update",
    "rollback",
    "migrate",
    "status",
    "context",
    "rollout",
    "failover-intents",
    "rollout-intents",
];

/// What a controller declares.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Declaration {
    /// The kinds the controller serves.
    #[serde(default)]
    pub kinds: Vec<IntentKind>,
    /// Top-level segments of other controllers' kinds whose intents the
    /// controller is also given (in the tree's `all`), as EMCO's hpa
    /// action controller reads hpa placement's intents.
    #[serde(default)]
    pub reads: Vec<String>,
    /// Top-level segments whose intents in the project's other deployment
    /// intent groups the controller is given (in the tree's `others`, with
    /// the group each is in), as EMCO's sfcclient reads the client
    /// selectors of a chain another group deploys.
    #[serde(default)]
    pub reads_across: Vec<String>,
    /// Facts about the clusters the controller needs at call time.
    #[serde(default)]
    pub needs: Vec<Need>,
}

/// One kind of intent document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntentKind {
    /// Singular, for messages: "generic k8s intent".
    pub name: String,
    /// Its collection's URL segment: `generic-k8s-intents`.
    pub segment: String,
    /// Its path parameter's name, for the OpenAPI document.
    pub param: String,
    /// `None` under the deployment intent group, else the segment of the
    /// controller's kind it lives under.
    #[serde(default)]
    pub parent: Option<String>,
    /// How requests carry it.
    #[serde(default)]
    pub body: IntentBody,
    /// The JSON Schema of its `spec`.
    #[serde(default = "any_object")]
    pub schema: Value,
    /// Fields naming other resources, checked at instantiate.
    #[serde(default)]
    pub references: Vec<IntentReference>,
}

fn any_object() -> Value {
    serde_json::json!({"type": "object"})
}

/// How an intent's create and update requests carry it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntentBody {
    /// `{"metadata": …, "spec": …}` as JSON.
    #[default]
    Json,
    /// multipart: `metadata` and one `file` part.
    File,
    /// multipart: `metadata` and any number of `files` parts.
    Files,
}

/// A field of an intent that names another resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntentReference {
    /// JSON pointer into the document: `/spec/app`.
    pub field: String,
    /// What it names.
    pub to: ReferenceTarget,
    /// For a cluster: the pointer to its cluster provider's name.
    #[serde(default)]
    pub provider: Option<String>,
}

/// What an intent's reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceTarget {
    /// An app of the composite app.
    App,
    /// A cluster provider.
    ClusterProvider,
    /// A cluster of the provider the reference's `provider` names.
    Cluster,
    /// A logical cloud of the project.
    LogicalCloud,
}

/// Facts a controller may ask the host to read from the clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// Each cluster's nodes: labels, and allocatable minus requested.
    Nodes,
}

impl Declaration {
    /// Reads and checks a declaration; errors name the field.
    pub fn parse(bytes: &[u8]) -> Result<Self, FieldError> {
        let declaration: Declaration = serde_json::from_slice(bytes).map_err(|e| {
            FieldError::new(SECTION, format!("not a valid intent declaration: {e}"))
        })?;
        declaration.check()?;
        Ok(declaration)
    }

    fn check(&self) -> Result<(), FieldError> {
        let mut seen = BTreeSet::new();
        for (index, kind) in self.kinds.iter().enumerate() {
            let field = |name: &str| format!("{SECTION}.kinds[{index}].{name}");
            check_segment(&kind.segment)
                .map_err(|reason| FieldError::new(field("segment"), reason))?;
            if kind.param.is_empty() || !kind.param.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(FieldError::new(
                    field("param"),
                    "a path parameter name is letters and digits",
                ));
            }
            if kind.parent.is_none() && RESERVED_SEGMENTS.contains(&kind.segment.as_str()) {
                return Err(FieldError::new(
                    field("segment"),
                    format!("{:?} is served by wasmco itself", kind.segment),
                ));
            }
            // A kind's `parent` names it by segment, so each segment is one
            // kind's.
            if !seen.insert(kind.segment.clone()) {
                return Err(FieldError::new(
                    field("segment"),
                    format!("{:?} is declared twice", kind.segment),
                ));
            }
            if let Some(parent) = &kind.parent
                && !self.kinds.iter().any(|k| &k.segment == parent)
            {
                return Err(FieldError::new(
                    field("parent"),
                    format!("no kind of this controller has the segment {parent:?}"),
                ));
            }
            if !kind.schema.is_object() {
                return Err(FieldError::new(
                    field("schema"),
                    "a JSON Schema is an object",
                ));
            }
            for reference in &kind.references {
                if !reference.field.starts_with('/') {
                    return Err(FieldError::new(
                        field("references"),
                        format!("{:?} is not a JSON pointer", reference.field),
                    ));
                }
                if reference.to == ReferenceTarget::Cluster && reference.provider.is_none() {
                    return Err(FieldError::new(
                        field("references"),
                        "a cluster reference needs `provider`, the pointer to its provider",
                    ));
                }
            }
            // A parent chain that loops never reaches the group.
            let mut depth = 0;
            let mut at = kind.parent.as_deref();
            while let Some(parent) = at {
                depth += 1;
                if depth > self.kinds.len() {
                    return Err(FieldError::new(field("parent"), "the parents form a loop"));
                }
                at = self.kind(parent).and_then(|k| k.parent.as_deref());
            }
        }
        Ok(())
    }

    /// The kind whose segment is `segment` (unique within a declaration).
    pub fn kind(&self, segment: &str) -> Option<&IntentKind> {
        self.kinds.iter().find(|k| k.segment == segment)
    }

    /// The kind at `segment` directly under `parent` (`None`: the group).
    pub fn child(&self, parent: Option<&str>, segment: &str) -> Option<&IntentKind> {
        self.kind(segment).filter(|k| k.parent.as_deref() == parent)
    }

    /// The kinds directly under `parent` (`None`: the group).
    pub fn children<'a>(
        &'a self,
        parent: Option<&'a str>,
    ) -> impl Iterator<Item = &'a IntentKind> + 'a {
        self.kinds
            .iter()
            .filter(move |k| k.parent.as_deref() == parent)
    }

    /// The segments of the kinds under the group.
    pub fn top_segments(&self) -> impl Iterator<Item = &str> {
        self.children(None).map(|k| k.segment.as_str())
    }
}

fn check_segment(segment: &str) -> Result<(), String> {
    let fine = !segment.is_empty()
        && segment.len() <= 63
        && segment
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !segment.starts_with('-')
        && !segment.ends_with('-');
    if fine {
        Ok(())
    } else {
        Err(format!(
            "{segment:?} is not a URL segment: lowercase letters, digits and '-', at most 63"
        ))
    }
}

/// The path of an intent below its deployment intent group, as pairs of
/// (segment, name); `path` is the stored path, the group's four values first.
pub fn intent_steps(path: &[String]) -> impl Iterator<Item = (&str, &str)> {
    path.get(4..)
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|pair| (pair[0].as_str(), pair[1].as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Declaration, FieldError> {
        Declaration::parse(value.to_string().as_bytes())
    }

    #[test]
    fn a_declaration_with_a_child_kind_is_read() {
        let declaration = parse(json!({"kinds": [
            {"name": "hpa intent", "segment": "hpa-intents", "param": "hpaIntent",
             "schema": {"type": "object"}, "references": [{"field": "/spec/app", "to": "app"}]},
            {"name": "consumer", "segment": "hpa-resource-consumers", "param": "consumer",
             "parent": "hpa-intents", "body": "files"}],
            "needs": ["nodes"]}))
        .unwrap();
        assert_eq!(
            declaration.top_segments().collect::<Vec<_>>(),
            ["hpa-intents"]
        );
        assert_eq!(
            declaration
                .child(Some("hpa-intents"), "hpa-resource-consumers")
                .unwrap()
                .body,
            IntentBody::Files
        );
        assert_eq!(declaration.needs, [Need::Nodes]);
    }

    #[test]
    fn broken_declarations_name_the_field() {
        let field = |value| parse(value).unwrap_err().field;
        assert_eq!(
            field(json!({"kinds": [{"name": "x", "segment": "Bad", "param": "x"}]})),
            "wasmco:intents.kinds[0].segment"
        );
        assert_eq!(
            field(json!({"kinds": [{"name": "x", "segment": "status", "param": "x"}]})),
            "wasmco:intents.kinds[0].segment"
        );
        assert_eq!(
            field(json!({"kinds": [{"name": "x", "segment": "a", "param": "x", "parent": "b"}]})),
            "wasmco:intents.kinds[0].parent"
        );
        assert_eq!(
            field(json!({"kinds": [
                {"name": "x", "segment": "a", "param": "x", "parent": "b"},
                {"name": "y", "segment": "b", "param": "y", "parent": "a"}]})),
            "wasmco:intents.kinds[0].parent"
        );
        assert_eq!(
            field(json!({"kinds": [{"name": "x", "segment": "a", "param": "x",
                "references": [{"field": "/spec/c", "to": "cluster"}]}]})),
            "wasmco:intents.kinds[0].references"
        );
        assert_eq!(field(json!({"kinds": 3})), SECTION);
    }

    #[test]
    fn steps_pair_segments_and_names() {
        let path: Vec<String> = ["p", "ca", "v1", "dig", "hpa-intents", "i", "consumers", "c"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            intent_steps(&path).collect::<Vec<_>>(),
            [("hpa-intents", "i"), ("consumers", "c")]
        );
    }
}
