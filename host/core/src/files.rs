//! The `file` parts of multipart resources: manifest bundles and app
//! profiles (kubeconfigs are checked by the kubeconfig policy).

use std::io::Read;

use serde_json::Value;

use super::document::FieldError;
use super::limits::{Bounded, MAX_ARCHIVE_ENTRIES, MAX_UNPACKED_BYTES, TooLarge, check_yaml_depth};
use super::resource::Resource;

/// The Kubernetes objects of an app's file: one multi-document YAML (or JSON),
/// or a gzipped tar of `.yaml`/`.yml`/`.json` files (other files are ignored).
pub fn parse_manifests(bytes: &[u8]) -> Result<Vec<Resource>, FieldError> {
    let mut resources = Vec::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let unpacked = Bounded::new(flate2::read::GzDecoder::new(bytes), MAX_UNPACKED_BYTES);
        let mut archive = tar::Archive::new(unpacked);
        let unreadable = |e: std::io::Error| match e.get_ref() {
            Some(inner) if inner.is::<TooLarge>() => FieldError::new("file", inner.to_string()),
            _ => FieldError::new("file", format!("not a readable .tgz: {e}")),
        };
        let entries = archive.entries().map_err(unreadable)?;
        for (index, entry) in entries.enumerate() {
            if index >= MAX_ARCHIVE_ENTRIES {
                return Err(FieldError::new(
                    "file",
                    format!("holds more than {MAX_ARCHIVE_ENTRIES} entries"),
                ));
            }
            let mut entry = entry.map_err(unreadable)?;
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
            entry
                .read_to_string(&mut text)
                .map_err(|e| match e.get_ref() {
                    Some(inner) if inner.is::<TooLarge>() => {
                        FieldError::new("file", inner.to_string())
                    }
                    _ => FieldError::new(format!("file:{path}"), format!("not UTF-8 text: {e}")),
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
    check_yaml_depth(text).map_err(|reason| FieldError::new(field, reason))?;
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
    check_yaml_depth(text).map_err(|reason| FieldError::new("file", reason))?;
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

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any bytes: an answer, never a panic.
        #[test]
        fn manifests_from_any_bytes_are_parsed_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = parse_manifests(&bytes);
            let _ = check_profile(&bytes);
        }

        /// Text made of YAML's own punctuation, where parsers go wrong.
        #[test]
        fn yaml_punctuation_is_parsed_or_refused(text in "[-:\\[\\]{}, \n\"'#|>&*!a-z0-9]{0,400}") {
            let _ = parse_manifests(text.as_bytes());
            let _ = check_profile(text.as_bytes());
        }

        /// A gzip stream of anything (a tar or not) is refused or read, and
        /// never unpacks past the bound.
        #[test]
        fn any_gzip_stream_is_parsed_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let _ = parse_manifests(&gzip(&bytes));
        }

        /// A valid object survives any comment or blank noise around it.
        #[test]
        fn a_manifest_is_found_whatever_surrounds_it(name in "[a-z][a-z0-9-]{0,30}[a-z0-9]", noise in "(#[ -~]{0,20}\n|\n){0,5}") {
            let yaml = format!("{noise}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{noise}");
            let resources = parse_manifests(yaml.as_bytes()).unwrap();
            prop_assert_eq!(resources.len(), 1);
            prop_assert_eq!(&resources[0].key.name, &name);
        }
    }
}
