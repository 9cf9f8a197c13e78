//! The `file` parts of multipart resources: manifest bundles and app
//! profiles (kubeconfigs are checked by the kubeconfig policy).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::io::Read;

use serde_json::Value;

use super::document::FieldError;
use super::limits::{Bounded, MAX_ARCHIVE_ENTRIES, MAX_UNPACKED_BYTES, TooLarge, check_yaml_depth};
use super::resource::Resource;

/// What an app's file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppFileKind {
    /// Kubernetes manifests: one multi-document YAML, or a `.tgz` of them.
    Manifests,
    /// A Helm chart `.tgz`: `Chart.yaml` at its root or in its one top
    /// directory (as `helm package` makes it).
    Chart,
}

/// Tells a chart from manifests by the archive's paths, without reading
/// more than the tar headers.
pub fn app_file_kind(bytes: &[u8]) -> AppFileKind {
    if !is_gzip(bytes) {
        return AppFileKind::Manifests;
    }
    let mut archive = tar::Archive::new(Bounded::new(
        flate2::read::GzDecoder::new(bytes),
        MAX_UNPACKED_BYTES,
    ));
    let Ok(entries) = archive.entries() else {
        return AppFileKind::Manifests;
    };
    for entry in entries.take(MAX_ARCHIVE_ENTRIES).flatten() {
        let Ok(path) = entry.path() else { continue };
        let parts: Vec<_> = path
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect();
        let chart_yaml = |c: &std::path::Component<'_>| c.as_os_str() == "Chart.yaml";
        if matches!(parts.as_slice(), [file] | [_, file] if chart_yaml(file)) {
            return AppFileKind::Chart;
        }
    }
    AppFileKind::Manifests
}

/// Checks a chart's archive within the unpacking bounds before Helm reads
/// it: at most [`MAX_ARCHIVE_ENTRIES`] entries, as for any other archive.
pub fn check_chart_archive(bytes: &[u8]) -> Result<(), FieldError> {
    archive_texts(bytes, |_| false).map(drop)
}

/// The chart an app's archive holds, laid out as Helm's loader reads it:
/// one top directory with `Chart.yaml` in it. EMCO's own scripts pack
/// charts with `tar -C helm .`, so entries start with `./<chart>/`, and an
/// archive may hold several charts; EMCO loads the folder named after the
/// app, else the archive's one top-level folder, else its root. An archive
/// already in Helm's layout is returned as it is.
pub fn chart_for_app<'a>(bytes: &'a [u8], app: &str) -> Result<Cow<'a, [u8]>, FieldError> {
    // Headers first: most archives are Helm's already, and are not read twice.
    let entries = archive_entries(bytes, false)?;
    let has_chart_yaml = |dir: &str| {
        entries
            .iter()
            .any(|e| e.is_file && e.path == format!("{dir}Chart.yaml"))
    };
    let tops: BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e.path.split_once('/').map(|(top, _)| top))
        .collect();
    let root = if has_chart_yaml(&format!("{app}/")) {
        format!("{app}/")
    } else if let [top] = tops.iter().collect::<Vec<_>>().as_slice()
        && has_chart_yaml(&format!("{top}/"))
    {
        format!("{top}/")
    } else if has_chart_yaml("") {
        String::new()
    } else {
        let reason = match tops.len() {
            0 | 1 => "holds no Chart.yaml at its root or in its one top folder".to_owned(),
            _ => format!(
                "the archive holds the folders {} and none named after the app {app} has a Chart.yaml",
                tops.into_iter().collect::<Vec<_>>().join(", ")
            ),
        };
        return Err(FieldError::new("file", reason));
    };
    let canonical = !root.is_empty() && tops.len() == 1 && entries.iter().all(|e| !e.dot_prefixed);
    if canonical {
        return Ok(Cow::Borrowed(bytes));
    }
    let folder = if root.is_empty() {
        app
    } else {
        root.trim_end_matches('/')
    };
    let repack =
        |e: std::io::Error| FieldError::new("file", format!("cannot repack the chart: {e}"));
    let mut packed = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for entry in archive_entries(bytes, true)?.iter().filter(|e| e.is_file) {
        let Some(rest) = entry.path.strip_prefix(&root) else {
            continue;
        };
        let mut header = tar::Header::new_gnu();
        header.set_size(entry.data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        packed
            .append_data(
                &mut header,
                format!("{folder}/{rest}"),
                entry.data.as_slice(),
            )
            .map_err(repack)?;
    }
    let gz = packed.into_inner().map_err(repack)?;
    Ok(Cow::Owned(gz.finish().map_err(repack)?))
}

/// One entry of an archive, its path without a leading `./`.
struct ArchiveEntry {
    path: String,
    dot_prefixed: bool,
    is_file: bool,
    /// Its content, when read.
    data: Vec<u8>,
}

/// Every entry of a `.tgz` (with its content when `with_data`), read
/// within the unpacking bounds; a path that leaves the archive's root is
/// refused.
fn archive_entries(bytes: &[u8], with_data: bool) -> Result<Vec<ArchiveEntry>, FieldError> {
    let unpacked = Bounded::new(flate2::read::GzDecoder::new(bytes), MAX_UNPACKED_BYTES);
    let mut archive = tar::Archive::new(unpacked);
    let unreadable = |e: std::io::Error| match e.get_ref() {
        Some(inner) if inner.is::<TooLarge>() => FieldError::new("file", inner.to_string()),
        _ => FieldError::new("file", format!("not a readable .tgz: {e}")),
    };
    let mut read = Vec::new();
    for (index, entry) in archive.entries().map_err(unreadable)?.enumerate() {
        if index >= MAX_ARCHIVE_ENTRIES {
            return Err(FieldError::new(
                "file",
                format!("holds more than {MAX_ARCHIVE_ENTRIES} entries"),
            ));
        }
        let mut entry = entry.map_err(unreadable)?;
        let raw = entry.path().map_err(unreadable)?.into_owned();
        let mut parts = Vec::new();
        for component in raw.components() {
            match component {
                std::path::Component::Normal(part) => {
                    parts.push(part.to_string_lossy().into_owned())
                }
                std::path::Component::CurDir => {}
                _ => {
                    return Err(FieldError::new(
                        format!("file:{}", raw.display()),
                        "a path in the archive leaves its root",
                    ));
                }
            }
        }
        let is_file = entry.header().entry_type().is_file();
        let mut data = Vec::new();
        if is_file && with_data {
            entry.read_to_end(&mut data).map_err(unreadable)?;
        }
        read.push(ArchiveEntry {
            dot_prefixed: raw.components().next() == Some(std::path::Component::CurDir),
            path: parts.join("/"),
            is_file,
            data,
        });
    }
    Ok(read)
}

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// The text files of a `.tgz` whose paths `wanted` picks, by path (a
/// leading `./` removed), read within the unpacking bounds.
fn archive_texts(
    bytes: &[u8],
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<(String, String)>, FieldError> {
    let unpacked = Bounded::new(flate2::read::GzDecoder::new(bytes), MAX_UNPACKED_BYTES);
    let mut archive = tar::Archive::new(unpacked);
    let unreadable = |e: std::io::Error| match e.get_ref() {
        Some(inner) if inner.is::<TooLarge>() => FieldError::new("file", inner.to_string()),
        _ => FieldError::new("file", format!("not a readable .tgz: {e}")),
    };
    let entries = archive.entries().map_err(unreadable)?;
    let mut texts = Vec::new();
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
        let path = path.strip_prefix("./").unwrap_or(&path).to_owned();
        if !entry.header().entry_type().is_file() || !wanted(&path) {
            continue;
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|e| match e.get_ref() {
                Some(inner) if inner.is::<TooLarge>() => FieldError::new("file", inner.to_string()),
                _ => FieldError::new(format!("file:{path}"), format!("not UTF-8 text: {e}")),
            })?;
        texts.push((path, text));
    }
    Ok(texts)
}

/// The Kubernetes objects of an app's file: one multi-document YAML (or JSON),
/// or a gzipped tar of `.yaml`/`.yml`/`.json` files (other files are ignored).
/// A Helm chart is not read here: see [`app_file_kind`].
pub fn parse_manifests(bytes: &[u8]) -> Result<Vec<Resource>, FieldError> {
    let mut resources = Vec::new();
    if is_gzip(bytes) {
        let wanted = |path: &str| {
            [".yaml", ".yml", ".json"]
                .iter()
                .any(|ext| path.ends_with(ext))
        };
        for (path, text) in archive_texts(bytes, wanted)? {
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

/// An app profile.
#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    /// A YAML map. For a plain-manifest app: `Kind/name` to a merge patch
    /// of that resource; for a chart: Helm values.
    Map(serde_json::Map<String, Value>),
    /// EMCO's profile `.tgz`: `manifest.yaml` naming a Helm values file
    /// (`type.values`); the file's YAML.
    HelmValues(Vec<String>),
}

/// EMCO's profile `manifest.yaml`.
#[derive(serde::Deserialize)]
struct ProfileManifest {
    #[serde(default, rename = "type")]
    kind: ProfileType,
}

#[derive(serde::Deserialize, Default)]
struct ProfileType {
    #[serde(default)]
    values: Option<String>,
}

/// Reads an app profile: a YAML map, or EMCO's `.tgz` of `manifest.yaml`
/// and the values file it names.
pub fn read_profile(bytes: &[u8]) -> Result<Profile, FieldError> {
    if is_gzip(bytes) {
        return read_profile_archive(bytes);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| {
        FieldError::new(
            "file",
            "a profile is UTF-8 YAML or a .tgz with a manifest.yaml",
        )
    })?;
    check_yaml_depth(text).map_err(|reason| FieldError::new("file", reason))?;
    let value: Value = serde_norway::from_str(text)
        .map_err(|e| FieldError::new("file", format!("not YAML: {e}")))?;
    match value {
        Value::Object(map) => Ok(Profile::Map(map)),
        Value::Null => Ok(Profile::Map(serde_json::Map::new())),
        _ => Err(FieldError::new(
            "file",
            "a profile is a YAML map of overrides",
        )),
    }
}

fn read_profile_archive(bytes: &[u8]) -> Result<Profile, FieldError> {
    let wanted = |path: &str| [".yaml", ".yml"].iter().any(|ext| path.ends_with(ext));
    let texts = archive_texts(bytes, wanted)?;
    // `manifest.yaml` at the root, or in the archive's one top directory.
    let (dir, manifest) = texts
        .iter()
        .filter_map(|(path, text)| {
            let dir = path.strip_suffix("manifest.yaml")?;
            (dir.is_empty() || (dir.ends_with('/') && !dir[..dir.len() - 1].contains('/')))
                .then_some((dir, text))
        })
        .min_by_key(|(dir, _)| dir.len())
        .ok_or_else(|| FieldError::new("file", "the profile .tgz has no manifest.yaml"))?;
    check_yaml_depth(manifest).map_err(|reason| FieldError::new("file:manifest.yaml", reason))?;
    let manifest: ProfileManifest = serde_norway::from_str(manifest).map_err(|e| {
        FieldError::new("file:manifest.yaml", format!("not a profile manifest: {e}"))
    })?;
    let Some(values) = manifest.kind.values else {
        return Ok(Profile::HelmValues(Vec::new()));
    };
    let wanted = format!("{dir}{}", values.trim_start_matches("./"));
    let text = texts
        .iter()
        .find(|(path, _)| *path == wanted)
        .map(|(_, text)| text)
        .ok_or_else(|| {
            FieldError::new(
                "file:manifest.yaml",
                format!("type.values names {values}, which the profile .tgz does not hold"),
            )
        })?;
    check_yaml_depth(text).map_err(|reason| FieldError::new(format!("file:{wanted}"), reason))?;
    let parsed: Value = serde_norway::from_str(text)
        .map_err(|e| FieldError::new(format!("file:{wanted}"), format!("not YAML: {e}")))?;
    if !(parsed.is_object() || parsed.is_null()) {
        return Err(FieldError::new(
            format!("file:{wanted}"),
            "Helm values are a YAML map",
        ));
    }
    Ok(Profile::HelmValues(vec![text.clone()]))
}

/// Checks an app profile (see [`read_profile`]).
pub fn check_profile(bytes: &[u8]) -> Result<(), FieldError> {
    read_profile(bytes).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (path, text) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            // `append_data` would normalise `./`; EMCO's archives keep it.
            header.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, text.as_bytes()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn paths(archive: &[u8]) -> Vec<String> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(archive));
        archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn a_chart_packed_from_its_parent_folder_is_laid_out_for_helm() {
        // `tar -czf collectd.tar.gz -C helm .`, as EMCO's setup.sh packs it.
        let emco = tgz(&[
            ("./collectd/Chart.yaml", "name: collectd\n"),
            ("./collectd/templates/ds.yaml", "kind: DaemonSet\n"),
        ]);
        let chart = chart_for_app(&emco, "collectd").unwrap();
        assert_eq!(
            paths(&chart),
            ["collectd/Chart.yaml", "collectd/templates/ds.yaml"]
        );
        // Already Helm's layout: the same bytes.
        let helm = tgz(&[("web/Chart.yaml", "name: web\n")]);
        assert!(matches!(
            chart_for_app(&helm, "other").unwrap(),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn of_several_charts_the_one_named_after_the_app_is_taken() {
        let two = tgz(&[
            ("./operator/Chart.yaml", "name: operator\n"),
            ("./m3db/Chart.yaml", "name: m3db\n"),
            ("./m3db/values.yaml", "a: 1\n"),
        ]);
        let chart = chart_for_app(&two, "m3db").unwrap();
        assert_eq!(paths(&chart), ["m3db/Chart.yaml", "m3db/values.yaml"]);
        let err = chart_for_app(&two, "collectd").unwrap_err();
        assert_eq!(err.field, "file");
        assert!(err.reason.contains("m3db, operator"), "{}", err.reason);
        let root = tgz(&[("./Chart.yaml", "name: x\n")]);
        assert_eq!(paths(&chart_for_app(&root, "x").unwrap()), ["x/Chart.yaml"]);
        let escaping = tgz(&[("../Chart.yaml", "name: x\n")]);
        assert!(chart_for_app(&escaping, "x").is_err());
    }

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
