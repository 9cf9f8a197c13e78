//! The intents a controller declares and receives.
//!
//! A controller that serves its own intent kinds (EMCO's
//! `generic-k8s-intents`, `hpa-intents`, …) names them in a JSON document
//! embedded as the component's `wasmco:intents` custom section (see
//! [`declare_intents!`](crate::declare_intents)). The host then serves
//! their CRUD under the deployment intent group, checks their schemas and
//! references, and at call time hands the controller an [`IntentTree`] as
//! the request's `intent` string: the intents the deployment intent
//! group's `intents` document names for it, each with its children.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Deserialize;
use serde_json::Value;

/// What a declaring controller receives as its request's `intent`.
#[allow(deprecated, reason = "`facts` stays readable for controllers of 0.1.0")]
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentTree {
    /// The name the deployment intent group's `intents` document gives
    /// this controller.
    #[serde(default)]
    pub name: String,
    /// The deployment intent group being deployed.
    #[serde(default)]
    pub deployment_intent_group: DigIdentity,
    /// The top-level intents named `name`, of every top-level kind the
    /// controller declares; [`Self::all`] has every one the group holds.
    #[serde(default)]
    pub intents: Vec<IntentNode>,
    /// Every top-level intent of the group, of every kind the controller
    /// declares, for controllers that (as EMCO's hpa) act on all of them.
    #[serde(default)]
    pub all: Vec<IntentNode>,
    /// The project's other deployment intent groups with their intents of
    /// the segments the declaration's `readsAcross` names.
    #[serde(default)]
    pub others: Vec<OtherGroup>,
    /// Facts the host read from the clusters, for a controller built
    /// against contract 0.1.0 whose declaration asks for them (`"needs":
    /// ["nodes"]`); since 0.2.0 the nodes come in the request's node table
    /// ([`crate::Nodes`]) and this stays empty.
    #[deprecated(
        note = "empty since contract 0.2.0: read the request's node table with `nodes!(request.nodes)`"
    )]
    #[serde(default)]
    pub facts: Facts,
}

/// Another deployment intent group of the project, with the intents a
/// controller reads across groups.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OtherGroup {
    /// Its composite app.
    #[serde(default)]
    pub composite_app: String,
    /// The composite app's version.
    #[serde(default)]
    pub composite_app_version: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its top-level intents of the segments read.
    #[serde(default)]
    pub intents: Vec<IntentNode>,
}

/// The deployment intent group a call is for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DigIdentity {
    /// Its project.
    #[serde(default)]
    pub project: String,
    /// Its composite app.
    #[serde(default)]
    pub composite_app: String,
    /// The composite app's version.
    #[serde(default)]
    pub composite_app_version: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// The logical cloud it deploys into.
    #[serde(default)]
    pub logical_cloud: String,
    /// That logical cloud's labels (those of its namespace).
    #[serde(default)]
    pub logical_cloud_labels: BTreeMap<String, String>,
    /// The Kubernetes namespace of that logical cloud.
    #[serde(default)]
    pub namespace: String,
}

/// One stored intent, with its children by collection segment.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentNode {
    /// Its kind's name as declared.
    #[serde(default)]
    pub kind: String,
    /// `metadata` as stored (`name`, `description`, `userData1`, …).
    #[serde(default)]
    pub metadata: Value,
    /// `spec` as stored, valid against the kind's schema.
    #[serde(default)]
    pub spec: Value,
    /// The uploaded file of a `"body": "file"` kind, base64.
    #[serde(default)]
    pub file: Option<String>,
    /// That file as the host read it, when it is one YAML (or JSON) map:
    /// parsing YAML in the sandbox costs ten times what it does on the host.
    #[serde(default)]
    pub file_object: Option<Value>,
    /// The uploaded files of a `"body": "files"` kind.
    #[serde(default)]
    pub files: Vec<IntentFile>,
    /// Child intents, by the collection segment of their kind.
    #[serde(default)]
    pub children: BTreeMap<String, Vec<IntentNode>>,
}

impl IntentNode {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.metadata["name"].as_str().unwrap_or_default()
    }

    /// The children in collection `segment` (none when it has none).
    pub fn children(&self, segment: &str) -> &[IntentNode] {
        self.children.get(segment).map_or(&[], Vec::as_slice)
    }

    /// The file of a `"body": "file"` kind, decoded.
    pub fn file_bytes(&self) -> Option<Vec<u8>> {
        decode(self.file.as_deref()?)
    }
}

/// One file of a `"body": "files"` kind.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IntentFile {
    /// The file name it was uploaded with.
    pub name: String,
    /// Its content, base64.
    pub content: String,
    /// The content as the host read it, when it is one YAML (or JSON) map.
    #[serde(default)]
    pub object: Option<Value>,
}

impl IntentFile {
    /// The content, decoded.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        decode(&self.content)
    }
}

/// Facts about the clusters, by `provider+cluster`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Facts {
    /// Each cluster's nodes.
    #[serde(default)]
    pub nodes: BTreeMap<String, Vec<NodeFacts>>,
}

/// A node as a placement controller needs it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeFacts {
    /// The node's name.
    pub name: String,
    /// Its labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Per resource (`cpu`, `memory`, `nvidia.com/gpu`, …), its
    /// allocatable amount minus what the pods on it request, in whole
    /// units (cores, bytes, devices).
    #[serde(default)]
    pub available: BTreeMap<String, i64>,
}

impl IntentTree {
    /// Reads a request's `intent` string.
    pub fn parse(intent: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(intent)
    }

    /// Reads a request's `intent` string for a controller that reads only
    /// [`Self::intents`], leaving [`Self::all`] empty. `all` repeats the
    /// named intents among every other of the group: built and never read,
    /// it costs as much as the rest of the tree.
    pub fn parse_named(intent: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<Partial<Vec<IntentNode>, Skipped>>(intent).map(Partial::tree)
    }

    /// Reads a request's `intent` string for a controller that reads only
    /// [`Self::all`], leaving [`Self::intents`] empty.
    pub fn parse_all(intent: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<Partial<Skipped, Vec<IntentNode>>>(intent).map(Partial::tree)
    }
}

/// An [`IntentTree`] of which one intent list is read and the other only
/// stepped over.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Partial<Named, All> {
    #[serde(default)]
    name: String,
    #[serde(default)]
    deployment_intent_group: DigIdentity,
    #[serde(default)]
    intents: Named,
    #[serde(default)]
    all: All,
    #[serde(default)]
    others: Vec<OtherGroup>,
    #[serde(default)]
    facts: Facts,
}

/// An intent list stepped over, not built.
#[derive(Default)]
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Skipped)
    }
}

/// What a [`Partial`]'s intent list becomes in the tree.
trait IntentList {
    fn into_nodes(self) -> Vec<IntentNode>;
}

impl IntentList for Vec<IntentNode> {
    fn into_nodes(self) -> Vec<IntentNode> {
        self
    }
}

impl IntentList for Skipped {
    fn into_nodes(self) -> Vec<IntentNode> {
        Vec::new()
    }
}

impl<Named: IntentList, All: IntentList> Partial<Named, All> {
    #[allow(deprecated, reason = "`facts` is still carried for 0.1.0 trees")]
    fn tree(self) -> IntentTree {
        IntentTree {
            name: self.name,
            deployment_intent_group: self.deployment_intent_group,
            intents: self.intents.into_nodes(),
            all: self.all.into_nodes(),
            others: self.others,
            facts: self.facts,
        }
    }
}

fn decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Embeds the intent kinds a controller serves, the JSON document at
/// `path` (relative to the file that invokes it), as the component's
/// `wasmco:intents` custom section, where the host reads it on upload:
///
/// ```json
/// {"kinds": [{"name": "hpa intent", "segment": "hpa-intents", "param": "hpaIntent",
///             "parent": null, "body": "json",
///             "schema": {"type": "object", "required": ["app"], "properties": {"app": {"type": "string"}}},
///             "references": [{"field": "/spec/app", "to": "app"}]}],
///  "needs": ["nodes"]}
/// ```
///
/// `parent` is `null` for a kind under the deployment intent group, else
/// the segment of another of the controller's kinds; `body` is `json`,
/// `file` (multipart, one `file` part) or `files` (multipart, `files`
/// parts); `schema` is the JSON Schema of `spec`; `references` name the
/// app (`to: "app"`), cluster provider, cluster (with `provider`, the
/// pointer to its provider) or logical cloud a field holds, checked when
/// the group is instantiated.
#[macro_export]
macro_rules! declare_intents {
    ($path:literal) => {
        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        #[unsafe(link_section = "wasmco:intents")]
        #[used]
        static WASMCO_INTENTS: [u8; include_bytes!($path).len()] = *include_bytes!($path);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = r#"{"name": "mine",
        "deploymentIntentGroup": {"name": "dig"},
        "intents": [{"kind": "k", "metadata": {"name": "mine"},
                     "fileObject": {"kind": "ConfigMap"}, "file": "a2luZDogQ29uZmlnTWFw"}],
        "all": [{"kind": "k", "metadata": {"name": "mine"}},
                {"kind": "k", "metadata": {"name": "other"},
                 "files": [{"name": "p.yaml", "content": "", "object": {"data": {}}}]}]}"#;

    #[test]
    fn each_partial_reading_builds_one_list_and_the_rest_alike() {
        let whole = IntentTree::parse(TREE).unwrap();
        let named = IntentTree::parse_named(TREE).unwrap();
        let all = IntentTree::parse_all(TREE).unwrap();
        assert_eq!(named.intents.len(), 1);
        assert!(named.all.is_empty());
        assert!(all.intents.is_empty());
        assert_eq!(all.all.len(), 2);
        for tree in [&named, &all] {
            assert_eq!(tree.name, whole.name);
            assert_eq!(tree.deployment_intent_group.name, "dig");
        }
        assert_eq!(
            named.intents[0].file_object,
            Some(serde_json::json!({"kind": "ConfigMap"}))
        );
        assert_eq!(named.intents[0].file_bytes().unwrap(), b"kind: ConfigMap");
        assert_eq!(
            all.all[1].files[0].object,
            Some(serde_json::json!({"data": {}}))
        );
    }
}
