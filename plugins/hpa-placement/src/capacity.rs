//! What the clusters' nodes have free, read from the request once for all
//! apps.

use wasmco_guest::{Nodes, StringTable};

use crate::model::{Consumer, HpaIntent};

/// Every cluster's nodes, and what each node has free of each resource
/// any app asks for, read from the request's node table once for all apps.
pub struct Capacity<'a> {
    /// The resources asked for, in the order first asked; a demand names
    /// one by its position here.
    pub resources: Vec<&'a str>,
    pub nodes: Nodes<'a>,
    /// Per cluster index, where its nodes' rows start in `free`; one more
    /// item than clusters.
    row_start: Vec<usize>,
    /// Per node of each cluster, one amount per resource.
    free: Vec<i64>,
}

impl<'a> Capacity<'a> {
    pub fn new(
        intents: &'a [HpaIntent],
        strings: StringTable<'a>,
        nodes: Nodes<'a>,
        clusters: usize,
    ) -> Self {
        let mut resources: Vec<&str> = Vec::new();
        for need in intents
            .iter()
            .flat_map(|i| &i.consumers)
            .flat_map(Consumer::allocatable)
        {
            if !resources.contains(&need.resource.as_str()) {
                resources.push(&need.resource);
            }
        }
        // A resource no node lists is not in the request's strings: every
        // node has none of it.
        let ids: Vec<Option<u32>> = resources.iter().map(|r| strings.find(r)).collect();
        let mut row_start = Vec::with_capacity(clusters + 1);
        let mut free = Vec::new();
        for cluster in 0..clusters as u32 {
            row_start.push(free.len());
            for node in nodes.of(cluster) {
                free.extend(
                    ids.iter()
                        .map(|id| id.map_or(0, |resource| nodes.amount(node, resource))),
                );
            }
        }
        row_start.push(free.len());
        Capacity {
            resources,
            nodes,
            row_start,
            free,
        }
    }

    /// The cluster's nodes' free amounts, a row of `resources` per node.
    pub fn free(&self, cluster: u32) -> &[i64] {
        let cluster = cluster as usize;
        match (self.row_start.get(cluster), self.row_start.get(cluster + 1)) {
            (Some(&start), Some(&end)) => &self.free[start..end],
            _ => &[],
        }
    }
}
