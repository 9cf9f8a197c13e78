//! Building the string table and cluster table of a request.

use std::collections::HashMap;

use wasmco_core::{ClusterInfo, NodeInfo};

use super::{ClusterTable, NodeTable, Strings};

/// Collects a request's strings, then numbers them in byte order.
#[derive(Default)]
pub struct Interner<'a> {
    ids: HashMap<&'a str, u32>,
}

impl<'a> Interner<'a> {
    /// Notes a string the request will refer to.
    pub fn add(&mut self, text: &'a str) {
        self.ids.insert(text, 0);
    }

    /// Notes every string of `clusters`.
    pub fn add_clusters(&mut self, clusters: impl IntoIterator<Item = &'a ClusterInfo>) {
        for cluster in clusters {
            self.add(&cluster.provider);
            self.add(&cluster.name);
            for label in &cluster.labels {
                self.add(label);
            }
            for (key, value) in &cluster.kv {
                self.add(key);
                self.add(value);
            }
        }
    }

    /// Notes every string of the nodes of `clusters`.
    pub fn add_nodes(&mut self, clusters: impl IntoIterator<Item = &'a [NodeInfo]>) {
        for node in clusters.into_iter().flatten() {
            self.add(&node.name);
            for (key, value) in &node.labels {
                self.add(key);
                self.add(value);
            }
            for (resource, _) in &node.available {
                self.add(resource);
            }
        }
    }

    /// Numbers the strings and returns the table with the lookup for [`Self::id`].
    pub fn finish(mut self) -> (Strings, Interned<'a>) {
        let mut sorted: Vec<&'a str> = self.ids.keys().copied().collect();
        sorted.sort_unstable();
        let mut data = String::with_capacity(sorted.iter().map(|s| s.len()).sum());
        let mut ends = Vec::with_capacity(sorted.len());
        for (id, text) in (0u32..).zip(&sorted) {
            data.push_str(text);
            ends.push(data.len() as u32);
            self.ids.insert(text, id);
        }
        (Strings { data, ends }, Interned { ids: self.ids })
    }
}

/// The ids of an interned request's strings.
pub struct Interned<'a> {
    ids: HashMap<&'a str, u32>,
}

impl Interned<'_> {
    /// The id of a string that was added; unknown strings get `u32::MAX`,
    /// which no controller can resolve (a host bug, never seen by a user).
    pub fn id(&self, text: &str) -> u32 {
        self.ids.get(text).copied().unwrap_or(u32::MAX)
    }

    /// The cluster table of `clusters`, in order.
    pub fn cluster_table<'c>(
        &self,
        clusters: impl IntoIterator<Item = &'c ClusterInfo>,
    ) -> ClusterTable {
        let mut table = ClusterTable {
            provider: Vec::new(),
            name: Vec::new(),
            label_start: vec![0],
            labels: Vec::new(),
            kv_start: vec![0],
            kv_key: Vec::new(),
            kv_value: Vec::new(),
        };
        for cluster in clusters {
            table.provider.push(self.id(&cluster.provider));
            table.name.push(self.id(&cluster.name));
            table
                .labels
                .extend(cluster.labels.iter().map(|l| self.id(l)));
            table.label_start.push(table.labels.len() as u32);
            for (key, value) in &cluster.kv {
                table.kv_key.push(self.id(key));
                table.kv_value.push(self.id(value));
            }
            table.kv_start.push(table.kv_key.len() as u32);
        }
        table
    }

    /// The node table of `clusters`' nodes, cluster by cluster in order.
    pub fn node_table<'c>(&self, clusters: impl IntoIterator<Item = &'c [NodeInfo]>) -> NodeTable {
        let mut table = NodeTable::empty();
        table.node_start.push(0);
        table.label_start.push(0);
        table.resource_start.push(0);
        for nodes in clusters {
            for node in nodes {
                table.name.push(self.id(&node.name));
                for (key, value) in &node.labels {
                    table.label_key.push(self.id(key));
                    table.label_value.push(self.id(value));
                }
                table.label_start.push(table.label_key.len() as u32);
                for (resource, amount) in &node.available {
                    table.resource.push(self.id(resource));
                    table.amount.push(*amount);
                }
                table.resource_start.push(table.resource.len() as u32);
            }
            table.node_start.push(table.name.len() as u32);
        }
        table
    }
}
