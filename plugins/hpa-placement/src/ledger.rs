//! Charging one app's pods to a cluster's nodes, best fit first.

use wasmco_guest::Nodes;

use crate::demand::{Demand, no_room};

/// A cluster's nodes with what is still free on each, while one app's
/// pods are charged to them.
pub struct Ledger<'s> {
    pub nodes: Nodes<'s>,
    /// The cluster's nodes; the ledger's rows are in their order.
    pub of_cluster: core::ops::Range<u32>,
    /// Amounts per node row.
    pub resources: usize,
    /// A row of amounts per node, in [`Capacity::resources`] order.
    pub free: &'s mut Vec<i64>,
    pub eligible: &'s mut Vec<usize>,
}

impl Ledger<'_> {
    fn free(&self, node: usize, resource: usize) -> i64 {
        self.free[node * self.resources + resource]
    }

    /// Charges the demand's pods to the nodes, or says why it cannot.
    pub fn host(&mut self, demand: &Demand<'_>, resources: &[&str]) -> Result<(), String> {
        if self.of_cluster.is_empty() {
            return Err("the host reports no nodes for this cluster".into());
        }
        let per_pod = &demand.per_pod;
        let pods = demand.consumer.pods();
        self.find_eligible(demand)?;
        if per_pod.is_empty() {
            return Ok(());
        }
        // Best fit keeps choosing the node it charged until that node is
        // full (its room only shrinks), so a node's share is charged at once
        // and large replica counts cost one step per node.
        let mut hosted = 0;
        while hosted < pods {
            let Some(node) = self.best_fit(per_pod) else {
                return Err(no_room(demand, resources, hosted));
            };
            let room = per_pod
                .iter()
                .map(|&(resource, amount)| self.free(node, resource) / amount)
                .min()
                .unwrap_or(0);
            let share = room.min(pods - hosted);
            for &(resource, amount) in per_pod {
                self.free[node * self.resources + resource] -= amount * share;
            }
            hosted += share;
        }
        Ok(())
    }

    /// The nodes carrying every label the demand asks for, into `eligible`
    /// (as rows of the ledger).
    fn find_eligible(&mut self, demand: &Demand<'_>) -> Result<(), String> {
        let nodes = self.nodes;
        let carries = |node: u32, (key, value): (Option<u32>, Option<u32>)| match (key, value) {
            (Some(key), Some(value)) => nodes.label(node, key) == Some(value),
            _ => false,
        };
        let first = self.of_cluster.start;
        self.eligible.clear();
        self.eligible.extend(
            self.of_cluster
                .clone()
                .filter(|&node| demand.label_ids.iter().all(|&label| carries(node, label)))
                .map(|node| (node - first) as usize),
        );
        if !self.eligible.is_empty() {
            return Ok(());
        }
        if let Some(missing) = demand
            .label_ids
            .iter()
            .position(|&label| !self.of_cluster.clone().any(|node| carries(node, label)))
        {
            let (key, value) = demand.labels[missing];
            return Err(format!("no node has label {key}={value}"));
        }
        let labels: Vec<String> = demand
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        Err(format!(
            "no single node has all the labels {}",
            labels.join(", ")
        ))
    }

    /// The eligible node with room for every amount and the least room
    /// left, compared resource by resource in the order asked; the first
    /// such node on ties.
    fn best_fit(&self, per_pod: &[(usize, i64)]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &node in self.eligible.iter() {
            if !per_pod
                .iter()
                .all(|&(resource, amount)| self.free(node, resource) >= amount)
            {
                continue;
            }
            let tighter = best.is_none_or(|best| {
                let room = per_pod.iter().map(|&(r, _)| self.free(node, r));
                let best_room = per_pod.iter().map(|&(r, _)| self.free(best, r));
                room.lt(best_room)
            });
            if tighter {
                best = Some(node);
            }
        }
        best
    }
}
