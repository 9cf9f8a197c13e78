//! The intent kinds the stored controllers declare, and the trees of
//! intents handed to them at call time (see [`wasmco_core::intents`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{Value, json};

use wasmco_core::intents::{Declaration, IntentBody, IntentKind, ReferenceTarget};
use wasmco_core::{FieldError, Kind};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

/// One controller's declaration, its schemas compiled.
pub struct Declared {
    /// The controller's name.
    pub controller: String,
    /// What it declares.
    pub declaration: Declaration,
    /// By segment.
    validators: HashMap<String, jsonschema::Validator>,
}

impl std::fmt::Debug for Declared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Declared")
            .field("controller", &self.controller)
            .field("declaration", &self.declaration)
            .finish_non_exhaustive()
    }
}

impl Declared {
    /// Compiles `declaration`'s schemas; a schema that does not compile is
    /// refused naming it.
    pub fn new(controller: &str, declaration: Declaration) -> Result<Self, FieldError> {
        let mut validators = HashMap::new();
        for (index, kind) in declaration.kinds.iter().enumerate() {
            let validator = jsonschema::validator_for(&kind.schema).map_err(|e| {
                FieldError::new(
                    format!("{}.kinds[{index}].schema", wasmco_core::intents::SECTION),
                    format!("not a JSON Schema wasmco can check: {e}"),
                )
            })?;
            validators.insert(kind.segment.clone(), validator);
        }
        Ok(Declared {
            controller: controller.to_owned(),
            declaration,
            validators,
        })
    }

    /// Checks `spec` against `kind`'s schema; the error names the field
    /// (`spec.resource.requests`) and what the schema says of it.
    pub fn validate(&self, kind: &IntentKind, spec: &Value) -> Result<(), FieldError> {
        let Some(validator) = self.validators.get(&kind.segment) else {
            return Ok(());
        };
        match validator.iter_errors(spec).next() {
            None => Ok(()),
            Some(error) => {
                let mut field = "spec".to_owned();
                for step in error.instance_path().as_str().split('/').skip(1) {
                    field.push('.');
                    field.push_str(step);
                }
                Err(FieldError::new(field, error.to_string()))
            }
        }
    }

    /// The kinds the path's segments name, outermost first, when each is
    /// a kind of this controller under the one before.
    pub fn kinds_along<'a>(&'a self, segments: &[&str]) -> Option<Vec<&'a IntentKind>> {
        let mut kinds: Vec<&IntentKind> = Vec::new();
        for segment in segments {
            let parent = kinds.last().map(|k| k.segment.as_str());
            kinds.push(self.declaration.child(parent, segment)?);
        }
        Some(kinds)
    }
}

/// Every stored controller's declaration.
#[derive(Debug, Default)]
pub struct Catalog {
    by_controller: BTreeMap<String, Arc<Declared>>,
    /// Top-level segment → controller.
    top: HashMap<String, String>,
}

impl Catalog {
    /// The declaration of the controller serving top-level `segment`.
    pub fn serving(&self, segment: &str) -> Option<&Arc<Declared>> {
        self.by_controller.get(self.top.get(segment)?)
    }

    /// Every controller declaring top-level `segment` (one, or several
    /// registrations of the same kinds).
    pub fn serving_all<'a>(&'a self, segment: &'a str) -> impl Iterator<Item = &'a Arc<Declared>> {
        self.by_controller
            .values()
            .filter(move |d| d.declaration.top_segments().any(|s| s == segment))
    }

    /// The declaration of `controller`, if it declares anything.
    pub fn of(&self, controller: &str) -> Option<&Arc<Declared>> {
        self.by_controller.get(controller)
    }

    /// Every declaring controller, by name.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Declared>> {
        self.by_controller.values()
    }

    /// Whether `controller` may declare `declaration`: its top-level
    /// segments must not be another controller's.
    pub fn check_new(&self, controller: &str, declaration: &Declaration) -> Result<(), FieldError> {
        for (index, kind) in declaration.kinds.iter().enumerate() {
            if kind.parent.is_some() {
                continue;
            }
            // The same kinds from another controller (the same component
            // registered twice) mean the same documents; other kinds at a
            // taken segment would give its documents two meanings.
            if let Some(owner) = self.top.get(&kind.segment)
                && owner != controller
                && self
                    .by_controller
                    .get(owner)
                    .is_none_or(|found| found.declaration.kinds != declaration.kinds)
            {
                return Err(FieldError::new(
                    format!("{}.kinds[{index}].segment", wasmco_core::intents::SECTION),
                    format!(
                        "{:?} is already served by controller {owner}; segments under a \
                         deployment intent group are one controller's each",
                        kind.segment
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// [`Catalog`] read from the stored controllers, read again only after
/// the database changed.
#[derive(Default)]
pub struct IntentCatalog {
    cached: Mutex<Option<(u64, Arc<Catalog>)>>,
}

impl IntentCatalog {
    /// The catalog as `db` holds it now.
    pub fn current(&self, db: &ResourceDb) -> Result<Arc<Catalog>, DbError> {
        let generation = db.generation();
        if let Some((seen, catalog)) = &*self.cached.lock().unwrap_or_else(|p| p.into_inner())
            && *seen == generation
        {
            return Ok(catalog.clone());
        }
        let mut catalog = Catalog::default();
        for (id, body) in db.list(Kind::Controller, &[])? {
            let Some(declared) = body["status"].get("intents") else {
                continue;
            };
            let name = id.path[0].clone();
            let declaration: Declaration =
                serde_json::from_value(declared.clone()).map_err(|e| DbError::Corrupt {
                    id: id.clone(),
                    reason: e.to_string(),
                })?;
            let declared = Declared::new(&name, declaration).map_err(|e| DbError::Corrupt {
                id: id.clone(),
                reason: e.to_string(),
            })?;
            // Controllers come in name order: the first declaring a
            // segment serves it (any other declares the same kinds).
            for segment in declared.declaration.top_segments() {
                catalog
                    .top
                    .entry(segment.to_owned())
                    .or_insert_with(|| name.clone());
            }
            catalog.by_controller.insert(name, Arc::new(declared));
        }
        let catalog = Arc::new(catalog);
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((generation, catalog.clone()));
        Ok(catalog)
    }
}

/// A stored intent with its children, as a controller reads it.
#[derive(Debug, Clone)]
struct Node {
    id: ResourceId,
    body: Value,
    file: Option<Vec<u8>>,
    children: BTreeMap<String, Vec<usize>>,
}

/// Every declared intent of one deployment intent group, read in two scans.
pub struct GroupIntents {
    nodes: Vec<Node>,
    /// Index of each top-level node.
    top: Vec<usize>,
}

impl GroupIntents {
    /// Reads the intents under the group at `dig_path`.
    pub fn read(db: &ResourceDb, dig_path: &[String]) -> Result<Self, DbError> {
        let mut files = db.files_under(Kind::Intent, dig_path)?;
        let mut nodes: Vec<Node> = db
            .list_under(Kind::Intent, dig_path)?
            .into_iter()
            .map(|(id, body)| Node {
                file: files.remove(&id),
                id,
                body,
                children: BTreeMap::new(),
            })
            .collect();
        // Path order puts every parent before its children.
        nodes.sort_by(|a, b| a.id.path.cmp(&b.id.path));
        let index: HashMap<Vec<String>, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.path.clone(), i))
            .collect();
        let mut top = Vec::new();
        for i in 0..nodes.len() {
            let path = nodes[i].id.path.clone();
            if path.len() <= 6 {
                top.push(i);
                continue;
            }
            if let Some(&parent) = index.get(&path[..path.len() - 2]) {
                let segment = path[path.len() - 2].clone();
                nodes[parent].children.entry(segment).or_default().push(i);
            }
        }
        Ok(GroupIntents { nodes, top })
    }

    /// The top-level intents in `segment`.
    fn top_in<'a>(&'a self, segment: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.top
            .iter()
            .copied()
            .filter(move |&i| self.nodes[i].id.path[4] == segment)
    }

    /// The tree `declared` is handed when the group's intents name it
    /// `name`: its top-level intents called `name`, and in `all` every
    /// top-level intent of its kinds and of the segments it reads.
    pub fn tree(&self, declared: &Declared, name: &str, group: Value, facts: Value) -> Value {
        let mut named = Vec::new();
        let mut all = Vec::new();
        let segments = declared
            .declaration
            .top_segments()
            .map(str::to_owned)
            .chain(declared.declaration.reads.iter().cloned())
            .collect::<Vec<_>>();
        for segment in &segments {
            for i in self.top_in(segment) {
                let node = self.node_json(i);
                if self.nodes[i].id.path[5] == name && declared.declaration.kind(segment).is_some()
                {
                    named.push(node.clone());
                }
                all.push(node);
            }
        }
        json!({
            "name": name,
            "deploymentIntentGroup": group,
            "intents": named,
            "all": all,
            "facts": facts,
        })
    }

    /// The top-level intents of `segments`, as a controller's tree holds
    /// them.
    pub fn top_of(&self, segments: &[String]) -> Vec<Value> {
        segments
            .iter()
            .flat_map(|segment| self.top_in(segment))
            .map(|i| self.node_json(i))
            .collect()
    }

    fn node_json(&self, i: usize) -> Value {
        let node = &self.nodes[i];
        let segment = &node.id.path[node.id.path.len() - 2];
        let mut out = json!({
            "kind": segment,
            "metadata": node.body["metadata"],
            "spec": node.body["spec"],
            "children": {},
        });
        if let Some(file) = &node.file {
            let engine = base64::engine::general_purpose::STANDARD;
            match serde_json::from_slice::<Vec<StoredFile>>(file) {
                // A `files` kind stores its parts as a list.
                Ok(parts) if node.body.get("files").is_some() => {
                    out["files"] = parts
                        .into_iter()
                        .map(|part| {
                            let mut file = json!({"name": part.name});
                            if let Some(map) =
                                engine.decode(&part.content).ok().and_then(|b| yaml_map(&b))
                            {
                                file["object"] = map;
                            }
                            file["content"] = json!(part.content);
                            file
                        })
                        .collect();
                }
                _ => {
                    if let Some(map) = yaml_map(file) {
                        out["fileObject"] = map;
                    }
                    out["file"] = json!(engine.encode(file));
                }
            }
        }
        for (segment, children) in &node.children {
            out["children"][segment] = children.iter().map(|&c| self.node_json(c)).collect();
        }
        out
    }

    /// Every intent a controller is handed whose reference names
    /// something missing, as a message per broken reference.
    pub fn broken_references(
        &self,
        declared: &Declared,
        exists: &ReferenceCheck<'_>,
    ) -> Result<Vec<String>, DbError> {
        let mut broken = Vec::new();
        for node in &self.nodes {
            let segments: Vec<&str> = wasmco_core::intents::intent_steps(&node.id.path)
                .map(|(segment, _)| segment)
                .collect();
            let Some(kinds) = declared.kinds_along(&segments) else {
                continue;
            };
            let Some(kind) = kinds.last() else { continue };
            for reference in &kind.references {
                let Some(target) = node.body.pointer(&reference.field).and_then(Value::as_str)
                else {
                    continue;
                };
                if target.is_empty() {
                    continue;
                }
                let provider = reference
                    .provider
                    .as_deref()
                    .and_then(|p| node.body.pointer(p))
                    .and_then(Value::as_str);
                if !exists(reference.to, target, provider)? {
                    let what = match reference.to {
                        ReferenceTarget::App => "app",
                        ReferenceTarget::ClusterProvider => "cluster provider",
                        ReferenceTarget::Cluster => "cluster",
                        ReferenceTarget::LogicalCloud => "logical cloud",
                    };
                    broken.push(format!(
                        "{} {}: {} names {what} {target}, which does not exist",
                        kind.name,
                        node.id.path[4..].join("/"),
                        reference.field.trim_start_matches('/').replace('/', "."),
                    ));
                }
            }
        }
        Ok(broken)
    }
}

pub use wasmco_store::appcontext::ClusterFacts;

/// Whether the target a reference names exists: what it is, its name,
/// and (for a cluster) its provider's.
pub type ReferenceCheck<'a> =
    dyn Fn(ReferenceTarget, &str, Option<&str>) -> Result<bool, DbError> + 'a;

/// Where declaring controllers' trees come from at instantiate.
#[derive(Clone, Copy)]
pub struct IntentSources<'a> {
    /// The declared kinds.
    pub catalog: &'a IntentCatalog,
    /// Facts from the clusters.
    pub facts: &'a dyn ClusterFacts,
}

/// One part of a `files` kind, as stored.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredFile {
    /// The part's file name.
    pub name: String,
    /// Its content, base64.
    pub content: String,
}

/// The largest file read for a controller (see [`yaml_map`]). YAML aliases
/// may expand a document a hundredfold (serde_norway's bound): read on the
/// host, outside any controller's memory limit, a file stays small.
const READ_FILE_LIMIT: usize = 64 * 1024;

/// The file as a YAML (or JSON) map, when it is one and only one and at
/// most [`READ_FILE_LIMIT`] bytes: a controller given it need not parse
/// YAML in the sandbox, where it costs ten times what it does here. A
/// larger file the controller reads itself, within its limits.
fn yaml_map(bytes: &[u8]) -> Option<Value> {
    if bytes.len() > READ_FILE_LIMIT {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    serde_norway::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

/// The file slot of an intent of `body` kind: a `file` as is, `files` as
/// a JSON list of [`StoredFile`].
pub fn stored_files(body: IntentBody, files: Vec<(String, Vec<u8>)>) -> Option<Vec<u8>> {
    match body {
        IntentBody::Json => None,
        IntentBody::File => files.into_iter().next().map(|(_, bytes)| bytes),
        IntentBody::Files => {
            let engine = base64::engine::general_purpose::STANDARD;
            let parts: Vec<StoredFile> = files
                .into_iter()
                .map(|(name, bytes)| StoredFile {
                    name,
                    content: engine.encode(bytes),
                })
                .collect();
            serde_json::to_vec(&parts).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_small_file_holding_one_map_is_read_for_the_controller() {
        assert_eq!(
            yaml_map(b"kind: ConfigMap\ndata:\n  size: 5\n"),
            Some(json!({"kind": "ConfigMap", "data": {"size": 5}}))
        );
        assert_eq!(
            yaml_map(br#"{"kind": "Pod"}"#),
            Some(json!({"kind": "Pod"}))
        );
        assert_eq!(yaml_map(b"- a\n- b\n"), None, "not a map");
        assert_eq!(yaml_map(b"a: 1\n---\nb: 2\n"), None, "two documents");
        assert_eq!(yaml_map(b"plain text"), None);
        assert_eq!(yaml_map(&[0xff, 0xfe]), None, "not text");
        let mut large = String::from("data:\n");
        for key in 0.. {
            let line = format!("  k{key}: v\n");
            if large.len() + line.len() > READ_FILE_LIMIT {
                break;
            }
            large.push_str(&line);
        }
        assert!(yaml_map(large.as_bytes()).is_some(), "at the limit");
        large.push_str("  last: v\n");
        assert_eq!(yaml_map(large.as_bytes()), None, "over the limit");
    }
}
