//! Building the string table and cluster table of a request.

use std::collections::HashMap;

use wasmco_core::ClusterInfo;

use super::{ClusterTable, Strings};

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
}
