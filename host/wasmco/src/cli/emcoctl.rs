//! EMCO's emcoctl documents, read as they are, and what applying or deleting
//! each one asks of the API.
//!
//! ```yaml
//! version: emco/v2
//! resourceContext:
//!   anchor: projects/{{.ProjectName}}/composite-apps
//! metadata: {name: app1}
//! spec: {compositeAppVersion: v1}
//! file: app1.tgz            # the multipart `file` part
//! ```
//!
//! Files are Go templates filled from a values file (`-v`), as emcoctl does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use wasmco_core::{BodyShape, Kind};

/// The actions a document's anchor may end in: a DIG's, a logical
/// cloud's, a cluster's network intents' (`apply`).
pub const ACTIONS: [&str; 8] = [
    "approve",
    "instantiate",
    "update",
    "rollback",
    "terminate",
    "stop",
    "migrate",
    "apply",
];

/// Why documents could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The values file is not a YAML mapping.
    #[error("values file {path}: {reason}")]
    Values {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A template placeholder could not be filled.
    #[error("{path}: {reason}")]
    Template {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A document is not an emcoctl document.
    #[error("{path}, document {index}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDocument {
    version: String,
    resource_context: ResourceContext,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    spec: Option<Value>,
    #[serde(default)]
    cluster_label: Option<String>,
    #[serde(default)]
    file: Option<String>,
    /// emcoctl's list form of `file`.
    #[serde(default)]
    files: Vec<String>,
    /// Fields wasmco does not know: the document is reported as
    /// unsupported on its own, and the rest of the file goes on.
    #[serde(flatten)]
    unknown: std::collections::BTreeMap<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceContext {
    anchor: String,
}

/// One emcoctl document.
#[derive(Debug, Clone)]
pub struct Document {
    /// Where it came from: `file.yaml#2`.
    pub origin: String,
    /// Its anchor, relative to `/v2`.
    pub anchor: String,
    /// `metadata`.
    pub metadata: Option<Value>,
    /// `spec`.
    pub spec: Option<Value>,
    /// A label document's `clusterLabel`.
    pub cluster_label: Option<String>,
    /// `files` then `file`, resolved against the document's directory.
    pub files: Vec<PathBuf>,
    /// Whether the document gave `files` (a list) rather than `file`: an
    /// intent kind of `files` body takes them as `files` parts.
    pub many: bool,
    /// Why wasmco cannot do what the document asks, found when reading it
    /// (fields it does not know, several files).
    pub unsupported: Option<String>,
}

/// What a document asks of the API.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// Create (or replace) a resource.
    Resource {
        /// Its kind.
        kind: Kind,
        /// The collection it is posted to.
        collection: String,
        /// Its own path.
        item: String,
        /// The request body (the multipart `metadata` part for multipart kinds).
        body: Value,
        /// Whether it travels as multipart.
        multipart: bool,
        /// Its files, each a multipart part named `part`.
        files: Vec<PathBuf>,
        /// `file`, or `files` for a declared intent kind that takes several.
        part: &'static str,
    },
    /// Nothing to send: what EMCO runs as a service is part of wasmco.
    Note {
        /// Why, for a person.
        reason: String,
    },
    /// A DIG action.
    Action {
        /// The DIG's path.
        dig: String,
        /// The action.
        action: String,
        /// Its body.
        body: Value,
    },
    /// Something wasmco does not have.
    Unsupported {
        /// Why, for a person.
        reason: String,
    },
}

/// Documents read from files, and what their templates left unfilled.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The documents, in order.
    pub documents: Vec<Document>,
    /// Values a template used that the values file does not set: each
    /// rendered as Go's templates render one (`<no value>`, false in `if`),
    /// as emcoctl does, and named here.
    pub warnings: Vec<String>,
}

/// Reads every document of `paths` (files, or directories of `*.yaml` files
/// in name order). A directory's `values.yaml` fills the templates of its
/// files when no values file is given, and is not read as documents.
pub fn load(paths: &[PathBuf], values: Option<&Path>) -> Result<Loaded, DocumentError> {
    let explicit = values.map(read_values).transpose()?;
    let mut loaded = Loaded::default();
    for path in paths {
        if path.is_dir() {
            let implicit = match &explicit {
                Some(_) => None,
                None => {
                    let candidate = path.join("values.yaml");
                    candidate
                        .exists()
                        .then(|| read_values(&candidate))
                        .transpose()?
                }
            };
            let values = explicit.as_ref().or(implicit.as_ref());
            for file in yaml_files(path)? {
                load_file(&file, values, &mut loaded)?;
            }
        } else {
            load_file(path, explicit.as_ref(), &mut loaded)?;
        }
    }
    Ok(loaded)
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, DocumentError> {
    let read = |source| DocumentError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        let values = path.file_stem().is_some_and(|s| s == "values");
        if path.is_file() && yaml && !values {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn read_values(path: &Path) -> Result<gtmpl::Value, DocumentError> {
    let text = std::fs::read_to_string(path).map_err(|source| DocumentError::Read {
        path: path.to_owned(),
        source,
    })?;
    let values: Value = serde_norway::from_str(&text).map_err(|e| DocumentError::Values {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    if !values.is_object() {
        return Err(DocumentError::Values {
            path: path.to_owned(),
            reason: "must be a mapping of names to values".into(),
        });
    }
    Ok(template_value(values))
}

/// Objects become Go-template structs, so a missing key is an error naming
/// it rather than an empty string in a resource name.
fn template_value(value: Value) -> gtmpl::Value {
    match value {
        Value::Null => gtmpl::Value::Nil,
        Value::Bool(b) => b.into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.into(),
            (None, Some(u), _) => u.into(),
            (_, _, Some(f)) => f.into(),
            _ => gtmpl::Value::Nil,
        },
        Value::String(s) => s.into(),
        Value::Array(items) => gtmpl::Value::Array(items.into_iter().map(template_value).collect()),
        Value::Object(map) => gtmpl::Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, template_value(v)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

fn load_file(
    path: &Path,
    values: Option<&gtmpl::Value>,
    loaded: &mut Loaded,
) -> Result<(), DocumentError> {
    let text = std::fs::read_to_string(path).map_err(|source| DocumentError::Read {
        path: path.to_owned(),
        source,
    })?;
    let (text, unset) = render_template(path, &text, values)?;
    for key in unset {
        loaded.warnings.push(format!(
            "{}: the template uses {{{{.{key}}}}}, which the values file does not set; \
             rendered as emcoctl renders it (`<no value>`, false in `if`)",
            path.display()
        ));
    }
    let base_dir = path.parent().unwrap_or(Path::new("."));
    let documents = &mut loaded.documents;
    for (index, yaml) in serde_norway::Deserializer::from_str(&text).enumerate() {
        let index = index + 1;
        let parse = |reason: String| DocumentError::Parse {
            path: path.to_owned(),
            index,
            reason,
        };
        let value = Value::deserialize(yaml).map_err(|e| parse(e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let raw: RawDocument = serde_json::from_value(value).map_err(|e| parse(e.to_string()))?;
        if raw.version != "emco/v2" {
            return Err(parse(format!(
                "version is {:?}; emcoctl documents are `emco/v2`",
                raw.version
            )));
        }
        let many = !raw.files.is_empty();
        let files: Vec<PathBuf> = raw
            .files
            .iter()
            .chain(&raw.file)
            .map(|f| resolve_file(base_dir, f))
            .collect();
        let unsupported = if !raw.unknown.is_empty() {
            let fields: Vec<&str> = raw.unknown.keys().map(String::as_str).collect();
            Some(format!(
                "the document has fields wasmco does not know: {} (it reads version, \
                 resourceContext, metadata, spec, clusterLabel, file and files)",
                fields.join(", ")
            ))
        } else {
            None
        };
        documents.push(Document {
            origin: format!("{}#{index}", path.display()),
            anchor: normalise_anchor(&raw.resource_context.anchor),
            metadata: raw.metadata,
            spec: raw.spec,
            cluster_label: raw.cluster_label,
            files,
            many,
            unsupported,
        });
    }
    Ok(())
}

/// Fills a file's Go template. A top-level value the values file does not
/// set is Go's "no value" (printed `<no value>`, false in `if`), as in
/// emcoctl, and returned by name so the user is told; one missing deeper
/// (a field of a `range` item) is an error naming it.
fn render_template(
    path: &Path,
    text: &str,
    values: Option<&gtmpl::Value>,
) -> Result<(String, Vec<String>), DocumentError> {
    if !text.contains("{{") {
        return Ok((text.to_owned(), Vec::new()));
    }
    let fail = |reason: String| DocumentError::Template {
        path: path.to_owned(),
        reason,
    };
    let Some(values) = values else {
        return Err(fail(
            "has template placeholders ({{...}}) but no values file was given (-v values.yaml)"
                .into(),
        ));
    };
    let mut template = gtmpl::Template::default();
    template
        .parse(text)
        .map_err(|e| fail(format!("template: {e}")))?;
    let mut filled = values.clone();
    let mut unset = Vec::new();
    loop {
        match template.render(&gtmpl::Context::from(filled.clone())) {
            Ok(text) => return Ok((text, unset)),
            Err(gtmpl::error::ExecError::NoFiledFor(key, receiver))
                if receiver == filled && !unset.contains(&key) =>
            {
                if let gtmpl::Value::Object(top) = &mut filled {
                    top.insert(key.clone(), gtmpl::Value::NoValue);
                }
                unset.push(key);
            }
            Err(e) => return Err(fail(fill_error(&e))),
        }
    }
}

/// What a failed fill says, in the user's words: the key an item of the
/// values lacks and the keys it has, never the values themselves (gtmpl's
/// message prints them all, secrets included).
fn fill_error(error: &gtmpl::error::ExecError) -> String {
    let gtmpl::error::ExecError::NoFiledFor(key, receiver) = error else {
        // Whatever else it says ends before a dump of the values.
        let error = error.to_string();
        let said = error.split(" for {").next().unwrap_or(&error);
        return format!("filling the template from the values: {said}");
    };
    let have = match receiver {
        gtmpl::Value::Object(map) | gtmpl::Value::Map(map) => {
            let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
            keys.sort_unstable();
            format!(" (it has {})", keys.join(", "))
        }
        _ => String::new(),
    };
    format!("the template uses {{{{.{key}}}}}, which an item of the values file does not set{have}")
}

/// emcoctl documents name files relative to where emcoctl runs; wasmco
/// also finds them next to the document, so a directory of documents can
/// be applied from anywhere.
fn resolve_file(base_dir: &Path, file: &str) -> PathBuf {
    let path = Path::new(file);
    let beside = base_dir.join(path);
    if path.is_relative() && beside.exists() {
        beside
    } else {
        path.to_owned()
    }
}

fn normalise_anchor(anchor: &str) -> String {
    let anchor = anchor.trim().trim_matches('/');
    anchor.strip_prefix("v2/").unwrap_or(anchor).to_owned()
}

impl Document {
    /// `metadata.name`, when the document has one.
    pub fn name(&self) -> Option<&str> {
        self.metadata.as_ref()?.get("name")?.as_str()
    }

    /// What applying this document asks of the API.
    pub fn operation(&self) -> Operation {
        if let Some(reason) = &self.unsupported {
            return Operation::Unsupported {
                reason: reason.clone(),
            };
        }
        let anchor = &self.anchor;
        if let Some((dig, action)) = anchor.rsplit_once('/')
            && ACTIONS.contains(&action)
            && let Some(target) = Kind::from_path(dig, true)
            && matches!(
                target,
                Kind::DeploymentIntentGroup | Kind::LogicalCloud | Kind::Cluster
            )
        {
            let supported = match target {
                Kind::LogicalCloud => {
                    matches!(action, "instantiate" | "terminate" | "update" | "stop")
                }
                Kind::Cluster => matches!(action, "apply" | "terminate" | "stop"),
                _ => action != "apply",
            };
            if !supported {
                return Operation::Unsupported {
                    reason: format!(
                        "wasmco has no `{action}` action for {}s",
                        target.info().title
                    ),
                };
            }
            return Operation::Action {
                dig: dig.to_owned(),
                action: action.to_owned(),
                body: self.spec.clone().unwrap_or_else(|| json!({})),
            };
        }
        // EMCO's ca-certs act on a caCert's `enrollment` or `distribution`.
        if let Some((stage, action)) = anchor.rsplit_once('/')
            && let Some((cert, step)) = stage.rsplit_once('/')
            && matches!(step, "enrollment" | "distribution")
            && matches!(
                Kind::from_path(cert, true),
                Some(Kind::CaCert | Kind::ProjectCaCert)
            )
        {
            if !matches!(action, "instantiate" | "terminate" | "update") {
                return Operation::Unsupported {
                    reason: format!("a ca cert's {step} has no `{action}` action"),
                };
            }
            return Operation::Action {
                dig: stage.to_owned(),
                action: action.to_owned(),
                body: self.spec.clone().unwrap_or_else(|| json!({})),
            };
        }
        if let Some(reason) = built_into_wasmco(anchor, self.name()) {
            return Operation::Note { reason };
        }
        let spec = self.spec.clone().unwrap_or_else(|| json!({}));
        let kind = match Kind::from_path(anchor, false) {
            Some(kind) => kind,
            // A kind a controller declares, under a DIG: the server knows it.
            None if under_a_dig(anchor) => Kind::Intent,
            None => {
                return Operation::Unsupported {
                    reason: format!(
                        "wasmco has no resources at `{anchor}` (it keeps EMCO's core resources \
                         and the intents its controllers declare; see `wasmco get --help` for \
                         the kinds it has)"
                    ),
                };
            }
        };
        let (name, body) = match kind.info().body {
            BodyShape::Label => match &self.cluster_label {
                Some(label) => (label.clone(), json!({"clusterLabel": label})),
                None => {
                    return Operation::Unsupported {
                        reason: "a label document needs `clusterLabel` at its top level".into(),
                    };
                }
            },
            _ => match self.name() {
                Some(name) => (
                    name.to_owned(),
                    json!({"metadata": self.metadata, "spec": spec}),
                ),
                None => {
                    return Operation::Unsupported {
                        reason: "the document has no metadata.name".into(),
                    };
                }
            },
        };
        let mut item = format!("{anchor}/{name}");
        if kind.is_versioned() {
            match spec.get("compositeAppVersion").and_then(Value::as_str) {
                Some(version) => {
                    item.push('/');
                    item.push_str(version);
                }
                None => {
                    return Operation::Unsupported {
                        reason: "a composite app document needs spec.compositeAppVersion".into(),
                    };
                }
            }
        }
        let files = self.files.clone();
        let (multipart, part) = match kind.info().body {
            _ if kind.is_declared() => {
                (!files.is_empty(), if self.many { "files" } else { "file" })
            }
            BodyShape::Multipart(_) if files.len() > 1 => {
                return Operation::Unsupported {
                    reason: format!(
                        "the document names {} files; a {} takes one `file`",
                        files.len(),
                        kind.info().title
                    ),
                };
            }
            // EMCO's registration by host and port travels as JSON; the
            // server binds the built-in component of that name.
            BodyShape::Multipart(_) if kind == Kind::Controller && files.is_empty() => {
                (false, "file")
            }
            BodyShape::Multipart(_) => (true, "file"),
            _ => (false, "file"),
        };
        Operation::Resource {
            kind,
            collection: anchor.clone(),
            item,
            body,
            multipart,
            files,
            part,
        }
    }
}

/// Whether `anchor` lies below a deployment intent group.
fn under_a_dig(anchor: &str) -> bool {
    let dig_depth = Kind::DeploymentIntentGroup
        .item_route()
        .trim_start_matches("/v2/")
        .split('/')
        .count();
    let parts: Vec<&str> = anchor.split('/').collect();
    parts.len() > dig_depth
        && Kind::from_path(&parts[..dig_depth].join("/"), true) == Some(Kind::DeploymentIntentGroup)
}

/// What EMCO registers as a service that wasmco has inside it, and so
/// needs no registration: rsync, dtc's sub-controllers (part of its dtc
/// component), and CLM's controllers (wasmco reads clusters itself).
fn built_into_wasmco(anchor: &str, name: Option<&str>) -> Option<String> {
    match (anchor, name) {
        ("controllers", Some("rsync")) => {
            Some("EMCO's rsync is built into wasmco; there is nothing to register".into())
        }
        ("dtc-controllers", Some(name)) => Some(format!(
            "dtc's sub-controller {name} is part of wasmco's built-in dtc component"
        )),
        ("clm-controllers", Some(name)) => Some(format!(
            "{name} needs no cluster events: wasmco reads what it needs from the clusters \
             when the controller is called"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn fills_templates_and_maps_anchors() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "values.yaml",
            "ProjectName: shop\nVersion: v1\n",
        );
        write(
            dir.path(),
            "10-apps.yaml",
            "version: emco/v2\nresourceContext:\n  anchor: projects/{{.ProjectName}}/composite-apps\n\
             metadata: {name: store}\nspec: {compositeAppVersion: {{.Version}}}\n---\n\
             version: emco/v2\nresourceContext: {anchor: cluster-providers/p/clusters/c/labels}\n\
             clusterLabel: edge\n---\n\
             version: emco/v2\nresourceContext: {anchor: projects/shop/composite-apps/store/v1/deployment-intent-groups/d/instantiate}\n",
        );
        let docs = load(&[dir.path().to_owned()], None).unwrap().documents;
        assert_eq!(docs.len(), 3);
        match docs[0].operation() {
            Operation::Resource { kind, item, .. } => {
                assert_eq!(kind, Kind::CompositeApp);
                assert_eq!(item, "projects/shop/composite-apps/store/v1");
            }
            other => panic!("{other:?}"),
        }
        match docs[1].operation() {
            Operation::Resource { item, body, .. } => {
                assert_eq!(item, "cluster-providers/p/clusters/c/labels/edge");
                assert_eq!(body, json!({"clusterLabel": "edge"}));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(docs[2].operation(), Operation::Action { ref action, .. } if action == "instantiate")
        );
        let lc = Document {
            anchor: "projects/p/logical-clouds/lc/instantiate".into(),
            ..docs[2].clone()
        };
        assert!(
            matches!(lc.operation(), Operation::Action { ref dig, .. } if dig == "projects/p/logical-clouds/lc")
        );
    }

    #[test]
    fn missing_value_names_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let values = write(dir.path(), "v.yaml", "Other: x\nApps: [{Name: a}]\n");
        // As emcoctl (Go's templates, default options): a top-level value
        // not set prints `<no value>` and is false in `if`; wasmco says so.
        let file = write(
            dir.path(),
            "a.yaml",
            "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: \"{{.ProjectName}}\"}\n\
             {{if .KubeConfig2}}---\nversion: emco/v2\nresourceContext: {anchor: second}\n{{end}}",
        );
        let loaded = load(std::slice::from_ref(&file), Some(&values)).unwrap();
        assert_eq!(loaded.documents.len(), 1);
        assert_eq!(
            loaded.documents[0].metadata,
            Some(json!({"name": "<no value>"}))
        );
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("{{.ProjectName}}"));
        assert!(loaded.warnings[1].contains("{{.KubeConfig2}}"));
        // A field missing from a `range` item is an error naming it.
        let file = write(
            dir.path(),
            "b.yaml",
            "{{range .Apps}}version: emco/v2\nresourceContext: {anchor: \"{{.Cluster}}\"}\n{{end}}",
        );
        let error = load(std::slice::from_ref(&file), Some(&values))
            .unwrap_err()
            .to_string();
        assert!(error.contains("{{.Cluster}}"), "{error}");
        assert!(error.contains("it has Name"), "{error}");
        assert!(!error.contains("\"x\""), "no value is printed: {error}");
        let error = load(&[file], None).unwrap_err().to_string();
        assert!(error.contains("-v values.yaml"), "{error}");
    }

    #[test]
    fn names_what_wasmco_lacks() {
        let doc = |anchor: &str, spec: Value| Document {
            origin: "t#1".into(),
            anchor: anchor.into(),
            metadata: Some(json!({"name": "x"})),
            spec: Some(spec),
            cluster_label: None,
            files: Vec::new(),
            many: false,
            unsupported: None,
        };
        // EMCO's own controllers go to the server, which binds the built-in
        // component; rsync and dtc's sub-controllers need nothing.
        assert!(matches!(
            doc("controllers", json!({"host": "gac", "port": 9033})).operation(),
            Operation::Resource {
                kind: Kind::Controller,
                multipart: false,
                ..
            }
        ));
        let mut rsync = doc("controllers", json!({"host": "rsync", "port": 9031}));
        rsync.metadata = Some(json!({"name": "rsync"}));
        assert!(matches!(rsync.operation(), Operation::Note { .. }));
        assert!(matches!(
            doc("dtc-controllers", json!({"host": "nps"})).operation(),
            Operation::Note { .. }
        ));
        // Under a DIG, any other segment is a kind some controller declares.
        let declared = doc(
            "projects/p/composite-apps/c/v1/deployment-intent-groups/d/network-controller-intent",
            json!({}),
        );
        let Operation::Resource {
            kind,
            item,
            multipart,
            ..
        } = declared.operation()
        else {
            panic!("a declared intent is posted")
        };
        assert_eq!(kind, Kind::Intent);
        assert!(item.ends_with("/network-controller-intent/x"), "{item}");
        assert!(!multipart);
        let Operation::Unsupported { reason } =
            doc("projects/p/nothing-here", json!({})).operation()
        else {
            panic!()
        };
        assert!(reason.contains("nothing-here"), "{reason}");
        // Each target's own actions, and only those.
        let dig = "projects/p/composite-apps/c/v1/deployment-intent-groups/d";
        for (anchor, acts) in [
            (format!("{dig}/migrate"), true),
            ("projects/p/logical-clouds/lc/update".into(), true),
            ("projects/p/logical-clouds/lc/stop".into(), true),
            ("cluster-providers/p/clusters/c/apply".into(), true),
            ("cluster-providers/p/clusters/c/terminate".into(), true),
            (format!("{dig}/apply"), false),
            ("cluster-providers/p/clusters/c/approve".into(), false),
            (
                "cluster-providers/p/ca-certs/c/enrollment/instantiate".into(),
                true,
            ),
            ("projects/p/ca-certs/c/distribution/terminate".into(), true),
            ("projects/p/ca-certs/c/distribution/stop".into(), false),
            ("projects/p/ca-certs/c/renewal/update".into(), false),
        ] {
            let operation = doc(&anchor, json!({})).operation();
            assert_eq!(
                matches!(operation, Operation::Action { .. }),
                acts,
                "{anchor}: {operation:?}"
            );
        }
    }

    #[test]
    fn an_unknown_field_makes_its_document_unsupported_not_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(
            dir.path(),
            "a.yaml",
            "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: a}\n---\n\
             version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: b}\nextra: 1\n---\n\
             version: emco/v2\nresourceContext: {anchor: projects/a/composite-apps/c/v1/apps}\n\
             metadata: {name: web}\nfiles: [web.tgz]\n---\n\
             version: emco/v2\nresourceContext: {anchor: projects/a/composite-apps/c/v1/apps}\n\
             metadata: {name: two}\nfiles: [a.tgz, b.tgz]\n",
        );
        let documents = load(&[file], None).unwrap().documents;
        assert_eq!(documents.len(), 4);
        assert!(matches!(
            documents[0].operation(),
            Operation::Resource { .. }
        ));
        let Operation::Unsupported { reason } = documents[1].operation() else {
            panic!("an unknown field is unsupported");
        };
        assert!(reason.contains("extra"), "{reason}");
        let Operation::Resource { files, part, .. } = documents[2].operation() else {
            panic!("files: with one entry is the file");
        };
        assert_eq!(part, "file");
        assert!(files[0].ends_with("web.tgz"), "{files:?}");
        assert!(matches!(
            documents[3].operation(),
            Operation::Unsupported { .. }
        ));
    }
}
