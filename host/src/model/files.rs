//! The `file` parts of multipart resources: kubeconfigs, manifest bundles,
//! app profiles.

use std::io::Read;

use serde_json::Value;

use super::document::FieldError;
use crate::appcontext::Resource;

/// Checks that `bytes` are a kubeconfig with at least one cluster and user.
pub fn check_kubeconfig(bytes: &[u8]) -> Result<(), FieldError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| FieldError::new("file", "a kubeconfig is UTF-8 YAML"))?;
    let config = kube::config::Kubeconfig::from_yaml(text)
        .map_err(|e| FieldError::new("file", format!("not a kubeconfig: {e}")))?;
    if config.clusters.is_empty() {
        return Err(FieldError::new(
            "file",
            "not a kubeconfig: it names no cluster",
        ));
    }
    if config.contexts.is_empty() {
        return Err(FieldError::new(
            "file",
            "not a kubeconfig: it has no context",
        ));
    }
    Ok(())
}

/// The Kubernetes objects of an app's file: one multi-document YAML (or JSON),
/// or a gzipped tar of `.yaml`/`.yml`/`.json` files (other files are ignored).
pub fn parse_manifests(bytes: &[u8]) -> Result<Vec<Resource>, FieldError> {
    let mut resources = Vec::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
        let entries = archive
            .entries()
            .map_err(|e| FieldError::new("file", format!("not a readable .tgz: {e}")))?;
        for entry in entries {
            let mut entry =
                entry.map_err(|e| FieldError::new("file", format!("not a readable .tgz: {e}")))?;
            let path = entry
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let wanted = [".yaml", ".yml", ".json"]
                .iter()
                .any(|ext| path.ends_with(ext));
            if !entry.header().entry_type().is_file() || !wanted {
                continue;
            }
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(|e| {
                FieldError::new(format!("file:{path}"), format!("not UTF-8 text: {e}"))
            })?;
            resources.extend(parse_yaml_documents(&text, &format!("file:{path}"))?);
        }
    } else {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| FieldError::new("file", "neither a .tgz nor UTF-8 YAML"))?;
        resources = parse_yaml_documents(text, "file")?;
    }
    if resources.is_empty() {
        return Err(FieldError::new("file", "holds no Kubernetes object"));
    }
    let mut seen = std::collections::HashSet::new();
    for resource in &resources {
        if !seen.insert(resource.key.clone()) {
            return Err(FieldError::new(
                "file",
                format!("{} appears twice", resource.key),
            ));
        }
    }
    Ok(resources)
}

fn parse_yaml_documents(text: &str, field: &str) -> Result<Vec<Resource>, FieldError> {
    let mut resources = Vec::new();
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value: Value = serde::Deserialize::deserialize(document)
            .map_err(|e| FieldError::new(format!("{field}[{index}]"), format!("not YAML: {e}")))?;
        if value.is_null() {
            continue;
        }
        let resource = Resource::from_manifest(value)
            .map_err(|e| FieldError::new(format!("{field}[{index}]"), e.to_string()))?;
        resources.push(resource);
    }
    Ok(resources)
}

/// An app profile: a YAML map of overrides.
pub fn check_profile(bytes: &[u8]) -> Result<(), FieldError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| FieldError::new("file", "a profile is UTF-8 YAML"))?;
    let value: Value = serde_norway::from_str(text)
        .map_err(|e| FieldError::new("file", format!("not YAML: {e}")))?;
    if value.is_object() || value.is_null() {
        Ok(())
    } else {
        Err(FieldError::new(
            "file",
            "a profile is a YAML map of overrides",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_yaml_is_split_and_checked() {
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n";
        let resources = parse_manifests(yaml.as_bytes()).unwrap();
        assert_eq!(resources.len(), 2);
        let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: a}\n";
        let err = parse_manifests(bad.as_bytes()).unwrap_err();
        assert_eq!(err.field, "file[1]");
        assert!(err.reason.contains("apiVersion"));
    }
}
