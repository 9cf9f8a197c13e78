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

/// A node as a test writes it, for [`FlatRequest::with_nodes`].
#[derive(Debug, Clone, Copy)]
pub struct TestNode<'a> {
    /// Name.
    pub name: &'a str,
    /// Labels.
    pub labels: &'a [(&'a str, &'a str)],
    /// What it has free, per resource.
    pub available: &'a [(&'a str, i64)],
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
    /// The node table's columns (see [`crate::node_table`]); empty unless
    /// built [`FlatRequest::with_nodes`].
    pub nodes: FlatNodes,
}

/// A node table in plain form.
#[derive(Debug, Clone, Default)]
pub struct FlatNodes {
    /// Column `node-start`.
    pub node_start: Vec<u32>,
    /// Column `name`.
    pub name: Vec<u32>,
    /// Column `label-start`.
    pub label_start: Vec<u32>,
    /// Column `label-key`.
    pub label_key: Vec<u32>,
    /// Column `label-value`.
    pub label_value: Vec<u32>,
    /// Column `resource-start`.
    pub resource_start: Vec<u32>,
    /// Column `resource`.
    pub resource: Vec<u32>,
    /// Column `amount`.
    pub amount: Vec<i64>,
}

impl FlatRequest {
    /// Interns the clusters' strings and `extra` (app names, groups, …).
    pub fn new(clusters: &[TestCluster<'_>], extra: &[&str]) -> Self {
        Self::with_nodes(clusters, extra, &[])
    }

    /// As [`Self::new`], with a node table: `nodes[i]` are cluster `i`'s
    /// nodes (a cluster past the end of `nodes` has none).
    pub fn with_nodes(
        clusters: &[TestCluster<'_>],
        extra: &[&str],
        nodes: &[&[TestNode<'_>]],
    ) -> Self {
        let mut all: Vec<&str> = extra.to_vec();
        for node in nodes.iter().flat_map(|n| n.iter()) {
            all.push(node.name);
            for (k, v) in node.labels {
                all.push(k);
                all.push(v);
            }
            all.extend(node.available.iter().map(|(r, _)| *r));
        }
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
        if !nodes.is_empty() {
            let table = &mut flat.nodes;
            table.node_start.push(0);
            table.label_start.push(0);
            table.resource_start.push(0);
            for cluster in 0..clusters.len() {
                for node in nodes.get(cluster).copied().unwrap_or_default() {
                    table.name.push(id(node.name));
                    for (k, v) in node.labels {
                        table.label_key.push(id(k));
                        table.label_value.push(id(v));
                    }
                    table.label_start.push(table.label_key.len() as u32);
                    for (r, amount) in node.available {
                        table.resource.push(id(r));
                        table.amount.push(*amount);
                    }
                    table.resource_start.push(table.resource.len() as u32);
                }
                table.node_start.push(table.name.len() as u32);
            }
        }
        flat
    }

    /// The id of a string given to [`Self::new`].
    pub fn id(&self, text: &str) -> u32 {
        crate::strings::StringTable::new(&self.data, &self.ends)
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

/// Builds a generated `NodeTable` (the type given first) from a
/// [`FlatRequest`]; all empty unless it was built with nodes.
#[macro_export]
macro_rules! node_table {
    ($ty:path, $flat:expr) => {{
        let nodes = &$flat.nodes;
        $ty {
            node_start: nodes.node_start.clone(),
            name: nodes.name.clone(),
            label_start: nodes.label_start.clone(),
            label_key: nodes.label_key.clone(),
            label_value: nodes.label_value.clone(),
            resource_start: nodes.resource_start.clone(),
            resource: nodes.resource.clone(),
            amount: nodes.amount.clone(),
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
