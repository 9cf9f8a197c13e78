//! hpa-placement, EMCO's hpa-plc (Hardware Platform Awareness placement) as
//! a wasmco placement controller.
//!
//! It serves EMCO's hpa intent kinds (see `intents.json`):
//! `hpa-intents/{hpaIntent}` (`spec.app`), under each
//! `hpa-resource-consumers/{hpaResourceConsumer}` (the Deployment `spec.name`,
//! `replicas`, `container`), under each `resource-requirements/{hpaResource}`:
//! a node label (`allocatable: false`, `resource: {key, value}`) or an amount
//! (`allocatable: true`, `resource: {name, requests, limits}`; cpu in cores,
//! memory in MB). It asks the host for the clusters' nodes (`"needs":
//! ["nodes"]`) and, like EMCO, acts on every hpa intent of the deployment
//! intent group, not only the one the group's `intents` document names.
//!
//! # The rule
//!
//! A cluster the app is placed on is kept iff, for every consumer (with at
//! least one requirement) of every hpa intent of the app, in stored order:
//!
//! 1. some node of the cluster carries every label the consumer asks for
//!    (these are the consumer's *eligible* nodes; with no label rule every
//!    node is eligible), and
//! 2. each of the consumer's `replicas` pods (one when unset) fits on a
//!    single eligible node with every allocatable amount it asks for. Pods
//!    are charged one after another to the fitting node with the least free
//!    capacity (best fit, compared on the requirements' resources in order),
//!    and the charges stay for the app's later pods, consumers and intents
//!    on that cluster.
//!
//! Free capacity is the host's `available` (allocatable minus what running
//! pods request); a node that does not list a resource has none of it. A
//! cluster the host reports no nodes for has neither labels nor capacity.
//!
//! Clusters that fail are unplaced. When every cluster of an anyOf group
//! fails, or an allOf cluster fails (each is its own group), placement
//! fails with a message naming the hpa intent and consumer that ruled each
//! cluster out.

#[allow(
    dead_code,
    reason = "shared with hpa-action, which reads the parts placement does not"
)]
mod model;

use std::collections::{BTreeMap, BTreeSet};

use model::{Consumer, HpaIntent};
use wasmco_guest::intents::{IntentTree, NodeFacts};

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "placement-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

pub use bindings::exports::wasmco::controller::placement::{
    PlacementEdit, PlacementRequest, UnplaceApp,
};
pub use bindings::wasmco::controller::types::{
    AppPlacement, ClusterTable, ControllerError, PlacedCluster, Strings,
};
use wasmco_guest::{Clusters, StringTable};

wasmco_guest::declare_intents!("../intents.json");

/// Unplaces every cluster whose nodes cannot host what the app's hpa
/// intents ask for.
pub fn place(request: &PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
    let tree = IntentTree::parse(&request.intent)
        .map_err(|e| error(format!("hpa intents are not valid: {e}")))?;
    let intents = model::read_intents(&tree).map_err(error)?;
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let clusters: Clusters<'_> = wasmco_guest::clusters!(request.clusters);
    // Each cluster's nodes, looked up once for every app.
    let nodes: Vec<&[NodeFacts]> = (0..clusters.len() as u32)
        .map(|cluster| {
            let key = fact_key(strings, clusters, cluster);
            tree.facts.nodes.get(&key).map_or(&[][..], Vec::as_slice)
        })
        .collect();
    let mut edits = Vec::new();
    for &app_id in &request.apps {
        let app = strings.get(app_id);
        let app_intents: Vec<&HpaIntent> = intents.iter().filter(|i| i.app == app).collect();
        let Some(first) = app_intents.first() else {
            continue;
        };
        let placement = request
            .current
            .iter()
            .find(|p| p.app == app_id)
            .ok_or_else(|| {
                error(format!(
                    "hpa-intent {}: app {app} has no placement to filter; \
                     a placement controller must place it first",
                    first.name
                ))
            })?;
        let app_check = AppCheck {
            app,
            intents: &app_intents,
            nodes: &nodes,
            clusters,
            strings,
        };
        if let Some(edit) = app_check.filter(placement)? {
            edits.push(edit);
        }
    }
    Ok(edits)
}

/// Checks one app's clusters against its hpa intents.
struct AppCheck<'a> {
    app: &'a str,
    intents: &'a [&'a HpaIntent],
    /// Per cluster index, its nodes.
    nodes: &'a [&'a [NodeFacts]],
    clusters: Clusters<'a>,
    strings: StringTable<'a>,
}

/// Why a cluster was ruled out.
struct Refusal<'a> {
    intent: &'a str,
    consumer: &'a str,
    reason: String,
}

impl AppCheck<'_> {
    fn filter(&self, placement: &AppPlacement) -> Result<Option<PlacementEdit>, ControllerError> {
        let mut refusals: BTreeMap<u32, Refusal<'_>> = BTreeMap::new();
        let mut checked = BTreeSet::new();
        for placed in &placement.clusters {
            if placed.cluster as usize >= self.clusters.len() {
                return Err(error(format!(
                    "app {}: its placement names unknown cluster {}",
                    self.app, placed.cluster
                )));
            }
            if checked.insert(placed.cluster)
                && let Err(refusal) = self.check_cluster(placed.cluster)
            {
                refusals.insert(placed.cluster, refusal);
            }
        }
        if refusals.is_empty() {
            return Ok(None);
        }
        self.every_group_keeps_one(placement, &refusals)?;
        Ok(Some(PlacementEdit::Unplace(UnplaceApp {
            app: self.app.to_owned(),
            clusters: refusals.into_keys().collect(),
        })))
    }

    /// Fails when an anyOf group loses all its clusters or an allOf
    /// cluster is ruled out.
    fn every_group_keeps_one(
        &self,
        placement: &AppPlacement,
        refusals: &BTreeMap<u32, Refusal<'_>>,
    ) -> Result<(), ControllerError> {
        let mut groups: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for placed in &placement.clusters {
            match placed.group {
                Some(group) => groups.entry(group).or_default().push(placed.cluster),
                None => {
                    if let Some(refusal) = refusals.get(&placed.cluster) {
                        return Err(error(format!(
                            "hpa-intent {}, hpa-resource-consumer {}: cluster {} of app {} \
                             (allOf) does not match the hpa resource rules: {}",
                            refusal.intent,
                            refusal.consumer,
                            self.cluster_name(placed.cluster),
                            self.app,
                            refusal.reason
                        )));
                    }
                }
            }
        }
        for (group, members) in groups {
            if members.iter().any(|c| !refusals.contains_key(c)) {
                continue;
            }
            let mut seen = BTreeSet::new();
            let reasons: Vec<String> = members
                .iter()
                .filter(|&&c| seen.insert(c))
                .filter_map(|c| {
                    let refusal = refusals.get(c)?;
                    Some(format!(
                        "{}: hpa-intent {}, hpa-resource-consumer {}: {}",
                        self.cluster_name(*c),
                        refusal.intent,
                        refusal.consumer,
                        refusal.reason
                    ))
                })
                .collect();
            return Err(error(format!(
                "none of the clusters of app {} in anyOf group {} match the hpa resource rules ({})",
                self.app,
                self.strings.get(group),
                reasons.join("; ")
            )));
        }
        Ok(())
    }

    /// Whether `cluster` can host every consumer of the app's intents; the
    /// first consumer it cannot host, otherwise.
    fn check_cluster(&self, cluster: u32) -> Result<(), Refusal<'_>> {
        let nodes = self
            .nodes
            .get(cluster as usize)
            .copied()
            .unwrap_or_default();
        let mut ledger = Ledger::new(nodes);
        for intent in self.intents {
            for consumer in &intent.consumers {
                if consumer.requirements.is_empty() {
                    continue;
                }
                ledger.host(consumer).map_err(|reason| Refusal {
                    intent: &intent.name,
                    consumer: &consumer.name,
                    reason,
                })?;
            }
        }
        Ok(())
    }

    fn cluster_name(&self, cluster: u32) -> String {
        fact_key(self.strings, self.clusters, cluster)
    }
}

/// `provider+cluster`, the name the host keys node facts by.
fn fact_key(strings: StringTable<'_>, clusters: Clusters<'_>, cluster: u32) -> String {
    format!(
        "{}+{}",
        strings.get(clusters.provider(cluster)),
        strings.get(clusters.name(cluster))
    )
}

/// A cluster's nodes with what is still free on each.
struct Ledger<'a> {
    nodes: &'a [NodeFacts],
    free: Vec<BTreeMap<&'a str, i64>>,
}

impl<'a> Ledger<'a> {
    fn new(nodes: &'a [NodeFacts]) -> Self {
        let free = nodes
            .iter()
            .map(|node| {
                node.available
                    .iter()
                    .map(|(resource, &amount)| (resource.as_str(), amount))
                    .collect()
            })
            .collect();
        Ledger { nodes, free }
    }

    /// Charges the consumer's pods to the nodes, or says why it cannot.
    fn host(&mut self, consumer: &Consumer) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("the host reports no nodes for this cluster".into());
        }
        let eligible = self.eligible(consumer)?;
        let per_pod = per_pod_amounts(consumer);
        if per_pod.is_empty() {
            return Ok(());
        }
        // Best fit keeps choosing the node it charged until that node is
        // full (its room only shrinks), so a node's share is charged at once
        // and large replica counts cost one step per node.
        let pods = consumer.pods();
        let mut hosted = 0;
        while hosted < pods {
            let Some(node) = self.best_fit(&eligible, &per_pod) else {
                let asked: Vec<String> = per_pod
                    .iter()
                    .map(|(resource, amount)| format!("{resource} {amount}"))
                    .collect();
                let on = if consumer.labels().next().is_some() {
                    "no node carrying its labels has that much left"
                } else {
                    "no node has that much left"
                };
                return Err(format!(
                    "replica {} of {pods} of {} needs {} free on one node, and {on}",
                    hosted + 1,
                    consumer.workload,
                    asked.join(", ")
                ));
            };
            let room = per_pod
                .iter()
                .map(|&(resource, amount)| self.free(node, resource) / amount)
                .min()
                .unwrap_or(0);
            let share = room.min(pods - hosted);
            for &(resource, amount) in &per_pod {
                if let Some(free) = self.free[node].get_mut(resource) {
                    *free -= amount * share;
                }
            }
            hosted += share;
        }
        Ok(())
    }

    fn free(&self, node: usize, resource: &str) -> i64 {
        self.free[node].get(resource).copied().unwrap_or(0)
    }

    /// The nodes carrying every label the consumer asks for.
    fn eligible(&self, consumer: &Consumer) -> Result<Vec<usize>, String> {
        let carries = |node: &NodeFacts, key: &str, value: &str| {
            node.labels.get(key).is_some_and(|v| v == value)
        };
        let eligible: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| {
                consumer
                    .labels()
                    .all(|(key, value)| carries(&self.nodes[n], key, value))
            })
            .collect();
        if !eligible.is_empty() {
            return Ok(eligible);
        }
        if let Some((key, value)) = consumer
            .labels()
            .find(|&(key, value)| !self.nodes.iter().any(|node| carries(node, key, value)))
        {
            return Err(format!("no node has label {key}={value}"));
        }
        let labels: Vec<String> = consumer.labels().map(|(k, v)| format!("{k}={v}")).collect();
        Err(format!(
            "no single node has all the labels {}",
            labels.join(", ")
        ))
    }

    /// The eligible node with room for every amount and the least room
    /// left, compared resource by resource in the order asked; the first
    /// such node on ties.
    fn best_fit(&self, eligible: &[usize], per_pod: &[(&str, i64)]) -> Option<usize> {
        let free = |node: usize, resource: &str| self.free(node, resource);
        eligible
            .iter()
            .copied()
            .filter(|&node| {
                per_pod
                    .iter()
                    .all(|&(resource, amount)| free(node, resource) >= amount)
            })
            .min_by_key(|&node| {
                per_pod
                    .iter()
                    .map(|&(resource, _)| free(node, resource))
                    .collect::<Vec<i64>>()
            })
    }
}

/// What one pod of the consumer takes, per resource in the order first
/// asked. When two requirements name the same resource the later one wins,
/// as it does in the Deployment hpa-action patches.
fn per_pod_amounts(consumer: &Consumer) -> Vec<(&str, i64)> {
    let mut amounts: Vec<(&str, i64)> = Vec::new();
    for need in consumer.allocatable() {
        let amount = need.per_pod();
        if amount <= 0 {
            continue;
        }
        match amounts.iter_mut().find(|(r, _)| *r == need.resource) {
            Some(slot) => slot.1 = amount,
            None => amounts.push((need.resource.as_str(), amount)),
        }
    }
    amounts
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct HpaPlacement;

    impl super::bindings::exports::wasmco::controller::placement::Guest for HpaPlacement {
        fn place(
            request: super::PlacementRequest,
        ) -> Result<Vec<super::PlacementEdit>, super::ControllerError> {
            super::place(&request)
        }
    }

    super::bindings::export!(HpaPlacement with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
