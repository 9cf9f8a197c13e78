//! New objects from their templates, and what a customization does to an
//! object: data from its files (new ConfigMaps and Secrets) and its patch.

use std::collections::HashSet;

use serde_json::{Map, Value};
use wasmco_guest::intents::{IntentFile, IntentNode};

use crate::spec::{CustomizationSpec, DataOptions, Gvk, PatchType};
use crate::strategic;

/// The kinds whose new objects take data from customization files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// A ConfigMap: a file's text goes into `data`.
    ConfigMap,
    /// A Secret: a file's content goes into `data`, base64.
    Secret,
    /// Any other kind: files are merge patches or nothing.
    Other,
}

impl ObjectKind {
    /// The kind of `resourceGVK.kind`, compared ignoring case as EMCO does.
    pub fn of(kind: &str) -> Self {
        if kind.eq_ignore_ascii_case("configmap") {
            ObjectKind::ConfigMap
        } else if kind.eq_ignore_ascii_case("secret") {
            ObjectKind::Secret
        } else {
            ObjectKind::Other
        }
    }

    fn title(self) -> &'static str {
        match self {
            ObjectKind::ConfigMap => "ConfigMap",
            ObjectKind::Secret => "Secret",
            ObjectKind::Other => "object",
        }
    }
}

/// A customization read once, ready to apply to any number of objects.
pub struct Customization<'a> {
    /// Its `metadata.name`.
    pub name: &'a str,
    /// Its spec.
    pub spec: CustomizationSpec,
    /// Its uploaded files.
    pub files: &'a [IntentFile],
    /// How it patches, if it does.
    pub patch: Option<PatchType>,
    /// `patchJson`, parsed, for `patchType: json`.
    json_patch: Option<json_patch::Patch>,
    /// The merge patches among its files, parsed, for `patchType: merge`.
    merge_patches: Vec<(&'a str, Value)>,
}

impl<'a> Customization<'a> {
    /// Reads the customization `node` of a resource of `kind`.
    pub fn load(node: &'a IntentNode, kind: ObjectKind) -> Result<Self, String> {
        let spec: CustomizationSpec = serde::Deserialize::deserialize(&node.spec)
            .map_err(|e| format!("its spec is not valid: {e}"))?;
        let patch = spec.patch_type()?;
        let mut json = None;
        let mut merge_patches = Vec::new();
        match patch {
            Some(PatchType::Json) => {
                if spec.patch_json.is_empty() {
                    return Err("patchType is json but patchJson has no operation".into());
                }
                for (index, operation) in spec.patch_json.iter().enumerate() {
                    if let Some(url) = lookup_url(operation) {
                        return Err(format!(
                            "patchJson[{index}] takes its value from {url}; controllers \
                             make no network calls here, so write the value itself"
                        ));
                    }
                }
                let operations = spec
                    .patch_json
                    .iter()
                    .map(serde::Deserialize::deserialize)
                    .collect::<Result<Vec<json_patch::PatchOperation>, _>>()
                    .map_err(|e| format!("patchJson is not an RFC 6902 patch: {e}"))?;
                json = Some(json_patch::Patch(operations));
            }
            Some(PatchType::Merge) => {
                if uploaded(&node.files).next().is_none() {
                    return Err(
                        "patchType is merge but no file was uploaded: the files are the merge patches"
                            .into(),
                    );
                }
                // A ConfigMap's or Secret's files are data, except those
                // the options flag as patches; any other kind's files are
                // all patches.
                let flagged = match kind {
                    ObjectKind::ConfigMap => Some(&spec.config_map_options),
                    ObjectKind::Secret => Some(&spec.secret_options),
                    ObjectKind::Other => None,
                };
                for file in uploaded(&node.files) {
                    if flagged.is_some_and(|options| {
                        !CustomizationSpec::is_patch_file(options, &file.name)
                    }) {
                        continue;
                    }
                    let patch = match &file.object {
                        Some(read_by_the_host) => read_by_the_host.clone(),
                        None => {
                            let text = file
                                .bytes()
                                .ok_or_else(|| format!("file {:?} is not base64", file.name))?;
                            parse_map(&text)
                                .map_err(|e| format!("merge patch file {:?} {e}", file.name))?
                        }
                    };
                    merge_patches.push((file.name.as_str(), patch));
                }
            }
            None => {}
        }
        Ok(Customization {
            name: node.name(),
            spec,
            files: &node.files,
            patch,
            json_patch: json,
            merge_patches,
        })
    }

    /// `patchJson` as the JSON text of an RFC 6902 patch.
    pub fn json_patch_text(&self) -> String {
        Value::Array(self.spec.patch_json.clone()).to_string()
    }

    /// Applies the customization's patch, if any, to `object`, of `kind`.
    pub fn apply_patch(&self, object: &mut Value, kind: &str) -> Result<(), String> {
        if let Some(operations) = &self.json_patch {
            json_patch::patch(object, operations).map_err(|e| format!("patchJson: {e}"))?;
        }
        for (file, patch) in &self.merge_patches {
            strategic::apply(object, patch, kind)
                .map_err(|e| format!("merge patch file {file:?}: {e}"))?;
        }
        Ok(())
    }

    /// Puts the customization's files into the `data` of `object`, a new
    /// ConfigMap or Secret, under their keys, except the files flagged as
    /// merge patches. `earlier` holds the keys earlier customizations set:
    /// those a file may set again, but not a key of the template nor one
    /// this customization already set.
    pub fn add_data(
        &self,
        object: &mut Value,
        kind: ObjectKind,
        earlier: &mut HashSet<String>,
    ) -> Result<(), String> {
        let options: &DataOptions = match kind {
            ObjectKind::ConfigMap => &self.spec.config_map_options,
            ObjectKind::Secret => &self.spec.secret_options,
            ObjectKind::Other => return Ok(()),
        };
        let object_name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut mine = HashSet::new();
        for file in uploaded(self.files) {
            if CustomizationSpec::is_patch_file(options, &file.name) {
                continue;
            }
            let key = self.spec.key_of(&file.name);
            check_data_key(key).map_err(|reason| {
                format!(
                    "data key {key:?} (of file {:?}) is not valid for a {}: {reason}",
                    file.name,
                    kind.title()
                )
            })?;
            let bytes = file
                .bytes()
                .ok_or_else(|| format!("file {:?} is not base64", file.name))?;
            let Value::Object(fields) = object else {
                return Err("internal: the object is not a map".into());
            };
            let taken = ["data", "binaryData"]
                .iter()
                .any(|field| fields.get(*field).and_then(|data| data.get(key)).is_some());
            if mine.contains(key) || (taken && !earlier.contains(key)) {
                return Err(format!(
                    "the data of {} {object_name} already has a key {key:?}",
                    kind.title()
                ));
            }
            // A ConfigMap keeps text in `data` and anything else, base64,
            // in `binaryData`; a Secret keeps base64 in `data`.
            let (field, other, value) = match (kind, String::from_utf8(bytes)) {
                (ObjectKind::ConfigMap, Ok(text)) => ("data", "binaryData", Value::String(text)),
                (ObjectKind::ConfigMap, Err(_)) => {
                    ("binaryData", "data", Value::String(file.content.clone()))
                }
                _ => ("data", "binaryData", Value::String(file.content.clone())),
            };
            if let Some(Value::Object(other)) = fields.get_mut(other) {
                other.remove(key);
            }
            let data = fields
                .entry(field)
                .or_insert_with(|| Value::Object(Map::new()));
            if !data.is_object() {
                *data = Value::Object(Map::new());
            }
            if let Value::Object(data) = data {
                data.insert(key.to_owned(), value);
            }
            mine.insert(key.to_owned());
        }
        earlier.extend(mine);
        Ok(())
    }
}

/// The files with content: EMCO keeps no empty upload.
fn uploaded(files: &[IntentFile]) -> impl Iterator<Item = &IntentFile> {
    files.iter().filter(|file| !file.content.is_empty())
}

/// The URL of a `$(http…)$` value, which EMCO fetches to get the value.
fn lookup_url(operation: &Value) -> Option<&str> {
    operation
        .get("value")?
        .as_str()?
        .strip_prefix("$(")
        .filter(|rest| rest.starts_with("http"))?
        .strip_suffix(")$")
}

/// The object a new resource starts from: its template, or for a
/// ConfigMap or Secret without one, an empty one named `resourceGVK.name`.
pub fn base_object(kind: ObjectKind, gvk: &Gvk, template: Option<&[u8]>) -> Result<Value, String> {
    let Some(template) = template.filter(|bytes| !bytes.is_empty()) else {
        return match kind {
            ObjectKind::ConfigMap => Ok(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": gvk.name}})),
            ObjectKind::Secret => Ok(serde_json::json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": gvk.name}})),
            ObjectKind::Other => Err(
                "newObject is true but no template file was uploaded: the file is the object to add"
                    .into(),
            ),
        };
    };
    let object = parse_map(template).map_err(|e| format!("the template file {e}"))?;
    checked_template(kind, object)
}

/// A template file read as a map, checked as the object a new resource
/// starts from.
pub fn checked_template(kind: ObjectKind, mut object: Value) -> Result<Value, String> {
    let text = |value: &Value| value.as_str().filter(|text| !text.is_empty()).is_some();
    let mut missing = Vec::new();
    if !text(&object["apiVersion"]) {
        missing.push("apiVersion");
    }
    let kind_ok = match kind {
        ObjectKind::Other => text(&object["kind"]),
        _ => object["kind"]
            .as_str()
            .is_some_and(|found| ObjectKind::of(found) == kind),
    };
    if !kind_ok {
        missing.push(match kind {
            ObjectKind::ConfigMap => "kind ConfigMap",
            ObjectKind::Secret => "kind Secret",
            ObjectKind::Other => "kind",
        });
    }
    if !text(&object["metadata"]["name"]) {
        missing.push("metadata.name");
    }
    if !missing.is_empty() {
        return Err(format!("the template file has no {}", missing.join(", ")));
    }
    if let Value::Object(fields) = &mut object {
        if kind == ObjectKind::Secret
            && fields
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            fields.insert("type".into(), Value::String("Opaque".into()));
        }
        // Data values are strings; YAML reads `count: 5` as a number, which
        // EMCO (reading into strings) takes as "5".
        if kind != ObjectKind::Other
            && let Some(Value::Object(data)) = fields.get_mut("data")
        {
            for value in data.values_mut() {
                match value {
                    Value::Number(number) => *value = Value::String(number.to_string()),
                    Value::Bool(flag) => *value = Value::String(flag.to_string()),
                    _ => {}
                }
            }
        }
    }
    Ok(object)
}

/// A YAML (or JSON) document that must be a map.
pub fn parse_map(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not text (UTF-8)".to_owned())?;
    let value: Value = serde_norway::from_str(text)
        .or_else(|yaml_error| serde_json::from_str(text).map_err(|_| yaml_error))
        .map_err(|e| format!("is not YAML: {e}"))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err("is not a YAML map".into())
    }
}

/// Kubernetes' rule for ConfigMap and Secret keys.
fn check_data_key(key: &str) -> Result<(), &'static str> {
    if key.is_empty() || key.len() > 253 {
        return Err("a key has 1 to 253 characters");
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("a key has only letters, digits, '-', '_' and '.'");
    }
    if key == "." || key == ".." || key.starts_with("..") {
        return Err("a key is not '.' or '..' and does not start with '..'");
    }
    Ok(())
}
