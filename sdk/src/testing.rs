//! Building requests natively, for a controller's unit tests and benchmarks.

use alloc::string::String;
use alloc::vec::Vec;

/// A cluster as a test writes it.
#[derive(Debug, Clone, Copy)]
pub struct TestCluster<'a> {
    /// Provider.
    pub provider: &'a str,
    /// Name.
    pub name: &'a str,
    /// Labels.
    pub labels: &'a [&'a str],
    /// Key/value pairs.
    pub kv: &'a [(&'a str, &'a str)],
}

/// A request's string table and cluster table in plain form, to be copied
/// into the bindings' types (see [`crate::cluster_table`]).
#[derive(Debug, Clone, Default)]
pub struct FlatRequest {
    /// `strings.data`.
    pub data: String,
    /// `strings.ends`.
    pub ends: Vec<u32>,
    /// Column `provider`.
    pub provider: Vec<u32>,
    /// Column `name`.
    pub name: Vec<u32>,
    /// Column `label-start`.
    pub label_start: Vec<u32>,
    /// Column `labels`.
    pub labels: Vec<u32>,
    /// Column `kv-start`.
    pub kv_start: Vec<u32>,
    /// Column `kv-key`.
    pub kv_key: Vec<u32>,
    /// Column `kv-value`.
    pub kv_value: Vec<u32>,
}

impl FlatRequest {
    /// Interns the clusters' strings and `extra` (app names, groups, …).
    pub fn new(clusters: &[TestCluster<'_>], extra: &[&str]) -> Self {
        let mut all: Vec<&str> = extra.to_vec();
        for c in clusters {
            all.push(c.provider);
            all.push(c.name);
            all.extend_from_slice(c.labels);
            for (k, v) in c.kv {
                all.push(k);
                all.push(v);
            }
        }
        all.sort_unstable();
        all.dedup();
        let mut flat = FlatRequest::default();
        for text in &all {
            flat.data.push_str(text);
            flat.ends.push(flat.data.len() as u32);
        }
        let id = |text: &str| {
            all.binary_search(&text)
                .map(|i| i as u32)
                .unwrap_or(u32::MAX)
        };
        flat.label_start.push(0);
        flat.kv_start.push(0);
        for c in clusters {
            flat.provider.push(id(c.provider));
            flat.name.push(id(c.name));
            flat.labels.extend(c.labels.iter().map(|l| id(l)));
            flat.label_start.push(flat.labels.len() as u32);
            for (k, v) in c.kv {
                flat.kv_key.push(id(k));
                flat.kv_value.push(id(v));
            }
            flat.kv_start.push(flat.kv_key.len() as u32);
        }
        flat
    }

    /// The id of a string given to [`Self::new`].
    pub fn id(&self, text: &str) -> u32 {
        crate::StringTable::new(&self.data, &self.ends)
            .find(text)
            .unwrap_or(u32::MAX)
    }
}

/// Builds a generated `ClusterTable` (the type given first) from a [`FlatRequest`].
#[macro_export]
macro_rules! cluster_table {
    ($ty:path, $flat:expr) => {{
        let flat = &$flat;
        $ty {
            provider: flat.provider.clone(),
            name: flat.name.clone(),
            label_start: flat.label_start.clone(),
            labels: flat.labels.clone(),
            kv_start: flat.kv_start.clone(),
            kv_key: flat.kv_key.clone(),
            kv_value: flat.kv_value.clone(),
        }
    }};
}

/// The JSON Schema that `declaration` (a controller's `intents.json`)
/// gives the kind at `segment`, for a unit test to hold example bodies
/// to what the host will check; `None` when no kind has that segment.
#[cfg(feature = "intents")]
pub fn declared_schema(declaration: &str, segment: &str) -> Option<serde_json::Value> {
    let declaration: serde_json::Value = serde_json::from_str(declaration).ok()?;
    declaration["kinds"]
        .as_array()?
        .iter()
        .find(|kind| kind["segment"] == segment)
        .map(|kind| kind["schema"].clone())
}
