//! Reading documents from files and directories.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::document::Document;
use super::error::DocumentError;
use super::template::{read_values, render_template};

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
