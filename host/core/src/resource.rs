//! Kubernetes objects (manifests) and candidate clusters, as uploads,
//! contexts and controllers see them.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A resource of an app: kind and `metadata.name`, EMCO's `name+Kind`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ResourceKey {
    /// The object's kind, e.g. `Deployment`.
    pub kind: String,
    /// The object's `metadata.name`.
    pub name: String,
}

impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.name, self.kind)
    }
}

/// A Kubernetes object: validated once, kept as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    /// Kind and name.
    pub key: ResourceKey,
    /// `apiVersion`.
    pub api_version: String,
    /// `metadata.namespace`, when the manifest sets one.
    pub namespace: Option<String>,
    /// The whole object.
    pub manifest: Value,
}

/// Why a document is not a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Not JSON (or YAML) at all.
    #[error("not valid JSON: {0}")]
    Syntax(String),
    /// Not an object.
    #[error("a Kubernetes object must be a map, not {0}")]
    NotAnObject(&'static str),
    /// A required field is missing or empty.
    #[error("{0} is missing or not a non-empty string")]
    Missing(&'static str),
    /// A name that Kubernetes would refuse.
    #[error("{field} {value:?} is not a valid Kubernetes name: {rule}")]
    InvalidName {
        /// `metadata.name` or `metadata.namespace`.
        field: &'static str,
        /// The name given.
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
}

impl Resource {
    /// Where this object goes in apply order: CRDs first so the objects
    /// that use them can be applied, namespaces before what lives in them,
    /// then the rest; removal goes the other way.
    pub fn apply_rank(&self) -> u8 {
        match self.key.kind.as_str() {
            "CustomResourceDefinition" => 0,
            "Namespace" => 1,
            _ => 2,
        }
    }

    /// Checks that `manifest` is a Kubernetes object with `apiVersion`, `kind`
    /// and a valid `metadata.name`.
    pub fn from_manifest(manifest: Value) -> Result<Self, ManifestError> {
        let Value::Object(object) = &manifest else {
            return Err(ManifestError::NotAnObject(json_type(&manifest)));
        };
        let text = |value: Option<&Value>, field| match value {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(ManifestError::Missing(field)),
        };
        let api_version = text(object.get("apiVersion"), "apiVersion")?;
        let kind = text(object.get("kind"), "kind")?;
        let metadata = object.get("metadata");
        let name = text(metadata.and_then(|m| m.get("name")), "metadata.name")?;
        if is_rbac(&api_version) {
            check_path_segment_name(&name)?;
        } else {
            check_object_name("metadata.name", &name)?;
        }
        let namespace = match metadata.and_then(|m| m.get("namespace")) {
            None | Some(Value::Null) => None,
            Some(value) => {
                let namespace = text(Some(value), "metadata.namespace")?;
                check_namespace(&namespace)?;
                Some(namespace)
            }
        };
        Ok(Resource {
            key: ResourceKey { kind, name },
            api_version,
            namespace,
            manifest,
        })
    }

    /// Parses and checks a manifest given as JSON text.
    pub fn from_json(text: &str) -> Result<Self, ManifestError> {
        let value = serde_json::from_str(text).map_err(|e| ManifestError::Syntax(e.to_string()))?;
        Self::from_manifest(value)
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

const SUBDOMAIN_RULE: &str = "at most 253 characters of lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (RFC 1123 subdomain)";
const LABEL_RULE: &str = "at most 63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit (RFC 1123 label)";

const PATH_SEGMENT_RULE: &str =
    "not empty, '.' or '..', and without '/' or '%' (a name RBAC objects may have)";

/// Whether `api_version` is RBAC's, whose objects' names are path segments
/// (`system:coredns`), not subdomains.
fn is_rbac(api_version: &str) -> bool {
    api_version.starts_with("rbac.authorization.k8s.io/")
}

/// Names of RBAC's roles and bindings, as Kubernetes checks them: anything
/// that is one segment of a URL path.
fn check_path_segment_name(name: &str) -> Result<(), ManifestError> {
    if name != "." && name != ".." && !name.contains(['/', '%']) {
        Ok(())
    } else {
        Err(ManifestError::InvalidName {
            field: "metadata.name",
            value: name.to_owned(),
            rule: PATH_SEGMENT_RULE,
        })
    }
}

/// Object names: an RFC 1123 subdomain, as Kubernetes requires of most kinds.
pub fn check_object_name(field: &'static str, name: &str) -> Result<(), ManifestError> {
    if is_rfc1123(name, 253, true) {
        Ok(())
    } else {
        Err(ManifestError::InvalidName {
            field,
            value: name.to_owned(),
            rule: SUBDOMAIN_RULE,
        })
    }
}

fn check_namespace(name: &str) -> Result<(), ManifestError> {
    if is_rfc1123(name, 63, false) {
        Ok(())
    } else {
        Err(ManifestError::InvalidName {
            field: "metadata.namespace",
            value: name.to_owned(),
            rule: LABEL_RULE,
        })
    }
}

fn is_rfc1123(name: &str, max: usize, dots: bool) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max
        && bytes.first().copied().is_some_and(alnum)
        && bytes.last().copied().is_some_and(alnum)
        && bytes
            .iter()
            .all(|&c| alnum(c) || c == b'-' || (dots && c == b'.'))
}

/// A cluster that a deployment may use, as controllers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    /// Its cluster provider.
    pub provider: String,
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// Its key/value pairs, from all its kv-pair documents.
    pub kv: Vec<(String, String)>,
}

impl ClusterInfo {
    /// The cluster's reference.
    pub fn reference(&self) -> ClusterRef {
        ClusterRef::new(&self.provider, &self.name)
    }
}

/// A node of a cluster, as a controller that asks for nodes sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: Vec<(String, String)>,
    /// Per resource (`cpu`, `memory`, `nvidia.com/gpu`, …), what is free:
    /// its allocatable amount less what its pods request, in whole units
    /// (cores, bytes, devices).
    pub available: Vec<(String, i64)>,
}

impl NodeInfo {
    /// The nodes of a cluster as rsync describes them: a list of
    /// `{"name", "labels": {key: value}, "available": {resource: amount}}`.
    /// A label that is not text, or an amount that is not a whole number,
    /// is left out; an amount past `i64` counts as `i64::MAX`.
    pub fn list_from_json(nodes: &serde_json::Value) -> Vec<NodeInfo> {
        fn entries(
            value: &serde_json::Value,
        ) -> impl Iterator<Item = (&String, &serde_json::Value)> {
            value.as_object().into_iter().flatten()
        }
        nodes
            .as_array()
            .into_iter()
            .flatten()
            .map(|node| NodeInfo {
                name: node["name"].as_str().unwrap_or_default().to_owned(),
                labels: entries(&node["labels"])
                    .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                    .collect(),
                available: entries(&node["available"])
                    .filter_map(|(resource, amount)| {
                        let amount = amount
                            .as_i64()
                            .or_else(|| amount.as_u64().map(|_| i64::MAX))?;
                        Some((resource.clone(), amount))
                    })
                    .collect(),
            })
            .collect()
    }
}

/// A cluster by its provider and name. EMCO writes it `provider+cluster`,
/// and so does wasmco wherever it is a key or a string (stored contexts,
/// status queries): neither part may hold a `+` (EMCO's naming rule).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterRef {
    /// Its cluster provider.
    pub provider: String,
    /// Its name.
    pub cluster: String,
}

impl ClusterRef {
    /// Cluster `cluster` of `provider`.
    pub fn new(provider: impl Into<String>, cluster: impl Into<String>) -> Self {
        ClusterRef {
            provider: provider.into(),
            cluster: cluster.into(),
        }
    }

    /// Reads `provider+cluster`; `None` without the `+`.
    pub fn parse(key: &str) -> Option<Self> {
        let (provider, cluster) = key.split_once('+')?;
        Some(ClusterRef::new(provider, cluster))
    }

    /// Whether `key` is this cluster's `provider+cluster`.
    pub fn is(&self, key: &str) -> bool {
        key.strip_prefix(self.provider.as_str())
            .and_then(|rest| rest.strip_prefix('+'))
            == Some(self.cluster.as_str())
    }
}

impl fmt::Display for ClusterRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.provider, self.cluster)
    }
}

impl Serialize for ClusterRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClusterRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A visitor rather than a String first: a context's placements are
        // read back by the hundred thousand.
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ClusterRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("provider+cluster")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<ClusterRef, E> {
                ClusterRef::parse(key)
                    .ok_or_else(|| E::custom(format!("{key:?} is not provider+cluster")))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_config_map_is_accepted_with_its_key() {
        let r = Resource::from_manifest(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg.v1", "namespace": "apps"}}))
        .unwrap();
        assert_eq!(r.key.to_string(), "cfg.v1+ConfigMap");
        assert_eq!(r.namespace.as_deref(), Some("apps"));
    }

    #[test]
    fn missing_fields_and_bad_names_are_named() {
        let err = |v| Resource::from_manifest(v).unwrap_err().to_string();
        assert!(err(json!({"kind": "X", "metadata": {"name": "a"}})).contains("apiVersion"));
        assert!(err(json!({"apiVersion": "v1", "metadata": {"name": "a"}})).contains("kind"));
        assert!(err(json!({"apiVersion": "v1", "kind": "X"})).contains("metadata.name"));
        assert!(
            err(json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "Bad_Name"}}))
                .contains("RFC 1123")
        );
        assert!(err(json!([1])).contains("a list"));
    }

    #[test]
    fn rbac_names_are_path_segments_as_kubernetes_checks_them() {
        let role = |name: &str| {
            Resource::from_manifest(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole", "metadata": {"name": name}}))
        };
        assert_eq!(role("system:coredns").unwrap().key.name, "system:coredns");
        for bad in ["a/b", "..", "50%"] {
            assert!(
                role(bad).unwrap_err().to_string().contains("'/' or '%'"),
                "{bad}"
            );
        }
        // Other kinds keep the subdomain rule.
        assert!(
            Resource::from_manifest(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "system:coredns"}}))
            .is_err()
        );
    }

    #[test]
    fn a_cluster_reference_is_provider_plus_cluster() {
        let reference = ClusterRef::new("edge", "c1");
        assert_eq!(reference.to_string(), "edge+c1");
        assert_eq!(ClusterRef::parse("edge+c1"), Some(reference.clone()));
        assert!(reference.is("edge+c1"));
        assert!(!reference.is("edge+c10") && !reference.is("edg+c1") && !reference.is("edgec1"));
        assert_eq!(ClusterRef::parse("edge"), None);
        let json = serde_json::to_value(&reference).unwrap();
        assert_eq!(json, json!("edge+c1"));
        assert_eq!(
            serde_json::from_value::<ClusterRef>(json).unwrap(),
            reference
        );
        assert!(serde_json::from_value::<ClusterRef>(json!("no-plus")).is_err());
    }
}
