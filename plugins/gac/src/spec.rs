//! The `spec` of gac's intent kinds, as `intents.json` declares them.
//!
//! The host has checked each spec against its schema; these types read it
//! leniently anyway (absent fields are empty, unknown ones ignored), as
//! EMCO reads a body into its Go structs.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A resource: a new object for an app, or one of the app's objects to patch.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSpec {
    /// The app the object belongs to.
    pub app: String,
    /// `"true"`: the resource's file is a new object; `"false"`: patch the
    /// object `resourceGVK` names.
    #[serde(deserialize_with = "flag")]
    pub new_object: bool,
    /// The object's kind and name.
    #[serde(rename = "resourceGVK")]
    pub resource_gvk: Gvk,
}

/// `resourceGVK`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Gvk {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`, as the user spelled it.
    pub kind: String,
    /// `metadata.name` of the object.
    pub name: String,
}

/// A customization of a resource: which clusters, and what changes there.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomizationSpec {
    /// `"false"`: every cluster of the app, whatever `clusterInfo` says.
    #[serde(deserialize_with = "flag")]
    pub cluster_specific: bool,
    /// The clusters, when `clusterSpecific` is `"true"`.
    pub cluster_info: ClusterInfo,
    /// `json`, `merge` or empty.
    pub patch_type: String,
    /// RFC 6902 operations, for `patchType: json`.
    pub patch_json: Vec<Value>,
    /// Data keys of a ConfigMap's files.
    pub config_map_options: DataOptions,
    /// Data keys of a Secret's files.
    pub secret_options: DataOptions,
}

/// `clusterInfo`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    /// `name` or `label`.
    pub scope: String,
    /// The provider of the clusters.
    pub cluster_provider: String,
    /// The cluster, for scope `name`.
    pub cluster: String,
    /// The cluster label, for scope `label`.
    pub cluster_label: String,
    /// `allow` (the clusters named) or `deny` (all the others).
    pub mode: String,
}

/// `configMapOptions` or `secretOptions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataOptions {
    /// One entry per file whose key or role differs from the default.
    pub data_key_options: Vec<KeyOption>,
}

/// One `dataKeyOptions` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeyOption {
    /// The uploaded file it is about.
    pub file_name: String,
    /// The data key the file's content goes under.
    pub key_name: String,
    /// `"true"`: the file is a strategic merge patch, not data.
    #[serde(deserialize_with = "flag")]
    pub merge_patch: bool,
}

/// How a customization patches its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902, from `patchJson`.
    Json,
    /// Kubernetes strategic merge, from the customization's files.
    Merge,
}

impl CustomizationSpec {
    /// The patch type; `None` when the customization does not patch.
    pub fn patch_type(&self) -> Result<Option<PatchType>, String> {
        match self.patch_type.to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "json" => Ok(Some(PatchType::Json)),
            "merge" => Ok(Some(PatchType::Merge)),
            other => Err(format!(
                "patchType {other:?} is not supported: use json or merge"
            )),
        }
    }

    /// The data key of the uploaded file `file`: its name, unless a
    /// `dataKeyOptions` entry maps it. EMCO maps the ConfigMap options
    /// first and the Secret options after them, so the last entry wins.
    pub fn key_of<'a>(&'a self, file: &'a str) -> &'a str {
        self.config_map_options
            .data_key_options
            .iter()
            .chain(&self.secret_options.data_key_options)
            .rfind(|option| option.file_name == file)
            .map_or(file, |option| option.key_name.as_str())
    }

    /// Whether `file` is flagged as a merge patch in `options`.
    pub fn is_patch_file(options: &DataOptions, file: &str) -> bool {
        options
            .data_key_options
            .iter()
            .any(|option| option.file_name == file && option.merge_patch)
    }
}

/// EMCO writes its booleans as the strings `"true"` and `"false"`, and
/// compares them lower-cased; a JSON boolean means the same.
fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::Bool(value) => value,
        Value::String(text) => text.eq_ignore_ascii_case("true"),
        _ => false,
    })
}
