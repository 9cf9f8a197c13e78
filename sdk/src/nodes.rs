//! The request's node table, for controllers that declare `"needs": ["nodes"]`.

use crate::columns::run;

/// A request's node table (`nodes`), read by cluster and node index:
/// `nodes!(request.nodes)`. Empty unless the controller's declaration asks
/// for nodes (`"needs": ["nodes"]`).
#[derive(Debug, Clone, Copy)]
pub struct Nodes<'a> {
    /// Column `node-start` (one more item than clusters).
    pub node_start: &'a [u32],
    /// Column `name`.
    pub name: &'a [u32],
    /// Column `label-start` (one more item than nodes).
    pub label_start: &'a [u32],
    /// Column `label-key`.
    pub label_key: &'a [u32],
    /// Column `label-value`.
    pub label_value: &'a [u32],
    /// Column `resource-start` (one more item than nodes).
    pub resource_start: &'a [u32],
    /// Column `resource`.
    pub resource: &'a [u32],
    /// Column `amount`.
    pub amount: &'a [i64],
}

/// A [`Nodes`] view of a generated `NodeTable`: `nodes!(request.nodes)`.
#[macro_export]
macro_rules! nodes {
    ($table:expr) => {
        $crate::Nodes {
            node_start: &$table.node_start,
            name: &$table.name,
            label_start: &$table.label_start,
            label_key: &$table.label_key,
            label_value: &$table.label_value,
            resource_start: &$table.resource_start,
            resource: &$table.resource,
            amount: &$table.amount,
        }
    };
}

impl<'a> Nodes<'a> {
    /// The nodes of cluster `cluster` (node indices); none when the table
    /// has no entry for it.
    pub fn of(&self, cluster: u32) -> core::ops::Range<u32> {
        let cluster = cluster as usize;
        match (
            self.node_start.get(cluster),
            self.node_start.get(cluster + 1),
        ) {
            (Some(&start), Some(&end)) if start <= end => start..end,
            _ => 0..0,
        }
    }

    /// Node `node`'s name (a string id); `u32::MAX` when out of range.
    pub fn name(&self, node: u32) -> u32 {
        self.name.get(node as usize).copied().unwrap_or(u32::MAX)
    }

    /// Node `node`'s labels, as (key, value) string ids.
    pub fn labels(&self, node: u32) -> impl Iterator<Item = (u32, u32)> + 'a {
        let keys = run(self.label_key, self.label_start, node);
        let values = run(self.label_value, self.label_start, node);
        keys.iter().copied().zip(values.iter().copied())
    }

    /// The value of node `node`'s label `key`, if it carries one.
    pub fn label(&self, node: u32, key: u32) -> Option<u32> {
        self.labels(node).find(|&(k, _)| k == key).map(|(_, v)| v)
    }

    /// How much of `resource` (a string id) node `node` has free; 0 for a
    /// resource it does not list.
    pub fn amount(&self, node: u32, resource: u32) -> i64 {
        let resources = run(self.resource, self.resource_start, node);
        let amounts = run(self.amount, self.resource_start, node);
        resources
            .iter()
            .position(|&r| r == resource)
            .and_then(|i| amounts.get(i).copied())
            .unwrap_or(0)
    }
}
