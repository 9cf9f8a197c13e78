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
use wasmco_guest::intents::IntentTree;

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
    AppPlacement, ClusterTable, ControllerError, NodeTable, Strings,
};
use wasmco_guest::{Clusters, Nodes, StringTable};

wasmco_guest::declare_intents!("../intents.json");

/// Unplaces every cluster whose nodes cannot host what the app's hpa
/// intents ask for.
pub fn place(request: &PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
    let tree = IntentTree::parse_all(&request.intent)
        .map_err(|e| error(format!("hpa intents are not valid: {e}")))?;
    let intents = model::read_intents(&tree).map_err(error)?;
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let clusters: Clusters<'_> = wasmco_guest::clusters!(request.clusters);
    let nodes: Nodes<'_> = wasmco_guest::nodes!(request.nodes);
    let capacity = Capacity::new(&intents, strings, nodes, clusters.len());
    let mut scratch = Scratch::default();
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
        let demands = demands(&app_intents, &capacity.resources, strings);
        let app_check = AppCheck {
            app,
            label_free: demands.iter().all(|d| d.labels.is_empty()),
            demands,
            capacity: &capacity,
            clusters,
            strings,
        };
        if let Some(edit) = app_check.filter(placement, &mut scratch)? {
            edits.push(edit);
        }
    }
    Ok(edits)
}

/// Every cluster's nodes, and what each node has free of each resource
/// any app asks for, read from the request's node table once for all apps.
struct Capacity<'a> {
    /// The resources asked for, in the order first asked; a demand names
    /// one by its position here.
    resources: Vec<&'a str>,
    nodes: Nodes<'a>,
    /// Per cluster index, where its nodes' rows start in `free`; one more
    /// item than clusters.
    row_start: Vec<usize>,
    /// Per node of each cluster, one amount per resource.
    free: Vec<i64>,
}

impl<'a> Capacity<'a> {
    fn new(
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
    fn free(&self, cluster: u32) -> &[i64] {
        let cluster = cluster as usize;
        match (self.row_start.get(cluster), self.row_start.get(cluster + 1)) {
            (Some(&start), Some(&end)) => &self.free[start..end],
            _ => &[],
        }
    }
}

/// What one consumer of an app asks of a cluster, read once per app.
struct Demand<'a> {
    intent: &'a str,
    consumer: &'a Consumer,
    labels: Vec<(&'a str, &'a str)>,
    /// The same labels as string ids; `None` for a text the request does
    /// not hold, which no node carries.
    label_ids: Vec<(Option<u32>, Option<u32>)>,
    /// What one pod takes, by resource position in [`Capacity::resources`],
    /// in the order first asked. When two requirements name the same
    /// resource the later one wins, as it does in the Deployment hpa-action
    /// patches.
    per_pod: Vec<(usize, i64)>,
    /// For each of `per_pod`, what the app's earlier demands take of that
    /// resource once all their pods are placed on one node.
    before: Vec<i64>,
}

/// The demands of the app's consumers with at least one requirement, in
/// stored order.
fn demands<'a>(
    intents: &[&'a HpaIntent],
    resources: &[&str],
    strings: StringTable<'_>,
) -> Vec<Demand<'a>> {
    let mut demands = Vec::new();
    let mut charged = vec![0i64; resources.len()];
    for intent in intents {
        for consumer in &intent.consumers {
            if consumer.requirements.is_empty() {
                continue;
            }
            let mut per_pod: Vec<(usize, i64)> = Vec::new();
            for need in consumer.allocatable() {
                let amount = need.per_pod();
                let Some(resource) = resources.iter().position(|r| *r == need.resource) else {
                    continue;
                };
                if amount <= 0 {
                    continue;
                }
                match per_pod.iter_mut().find(|(r, _)| *r == resource) {
                    Some(slot) => slot.1 = amount,
                    None => per_pod.push((resource, amount)),
                }
            }
            let before = per_pod.iter().map(|&(r, _)| charged[r]).collect();
            for &(r, amount) in &per_pod {
                charged[r] = charged[r].saturating_add(amount.saturating_mul(consumer.pods()));
            }
            let labels: Vec<(&str, &str)> = consumer.labels().collect();
            demands.push(Demand {
                intent: &intent.name,
                consumer,
                label_ids: labels
                    .iter()
                    .map(|&(key, value)| (strings.find(key), strings.find(value)))
                    .collect(),
                labels,
                per_pod,
                before,
            });
        }
    }
    demands
}

/// Buffers one app's check reuses from cluster to cluster.
#[derive(Default)]
struct Scratch {
    checked: Vec<bool>,
    ledger: Vec<i64>,
    eligible: Vec<usize>,
}

/// Checks one app's clusters against its hpa intents.
struct AppCheck<'a> {
    app: &'a str,
    demands: Vec<Demand<'a>>,
    /// Whether no demand asks for a node label.
    label_free: bool,
    capacity: &'a Capacity<'a>,
    clusters: Clusters<'a>,
    strings: StringTable<'a>,
}

/// Why a cluster was ruled out.
struct Refusal<'a> {
    intent: &'a str,
    consumer: &'a str,
    reason: String,
}

impl<'a> AppCheck<'a> {
    fn filter(
        &self,
        placement: &AppPlacement,
        scratch: &mut Scratch,
    ) -> Result<Option<PlacementEdit>, ControllerError> {
        let mut refusals: BTreeMap<u32, Refusal<'a>> = BTreeMap::new();
        scratch.checked.clear();
        scratch.checked.resize(self.clusters.len(), false);
        for &cluster in &placement.clusters {
            let Some(checked) = scratch.checked.get_mut(cluster as usize) else {
                return Err(error(format!(
                    "app {}: its placement names unknown cluster {cluster}",
                    self.app
                )));
            };
            if std::mem::replace(checked, true) {
                continue;
            }
            if let Err(refusal) = self.check_cluster(cluster, scratch) {
                refusals.insert(cluster, refusal);
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
        for (cluster, group) in wasmco_guest::placed(&placement.clusters, &placement.groups) {
            match group {
                Some(group) => groups.entry(group).or_default().push(cluster),
                None => {
                    if let Some(refusal) = refusals.get(&cluster) {
                        return Err(error(format!(
                            "hpa-intent {}, hpa-resource-consumer {}: cluster {} of app {} \
                             (allOf) does not match the hpa resource rules: {}",
                            refusal.intent,
                            refusal.consumer,
                            self.cluster_name(cluster),
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
    fn check_cluster(&self, cluster: u32, scratch: &mut Scratch) -> Result<(), Refusal<'a>> {
        let of_cluster = self.capacity.nodes.of(cluster);
        if of_cluster.len() == 1 && self.label_free {
            // One node and no label to match, as on most edge clusters: a
            // demand fits when the node, less what the app's earlier
            // demands took, holds all its pods. Best fit comes to the same
            // without a ledger to copy and charge.
            let free = self.capacity.free(cluster);
            for demand in &self.demands {
                let room = demand
                    .per_pod
                    .iter()
                    .zip(&demand.before)
                    .map(|(&(resource, amount), &before)| {
                        free[resource].saturating_sub(before) / amount
                    })
                    .min();
                if let Some(room) = room
                    && room < demand.consumer.pods()
                {
                    return Err(Refusal {
                        intent: demand.intent,
                        consumer: &demand.consumer.name,
                        reason: no_room(demand, &self.capacity.resources, room.max(0)),
                    });
                }
            }
            return Ok(());
        }
        let mut ledger = Ledger {
            nodes: self.capacity.nodes,
            of_cluster,
            resources: self.capacity.resources.len(),
            free: &mut scratch.ledger,
            eligible: &mut scratch.eligible,
        };
        ledger.free.clear();
        ledger.free.extend_from_slice(self.capacity.free(cluster));
        for demand in &self.demands {
            ledger
                .host(demand, &self.capacity.resources)
                .map_err(|reason| Refusal {
                    intent: demand.intent,
                    consumer: &demand.consumer.name,
                    reason,
                })?;
        }
        Ok(())
    }

    /// `provider+cluster`, as EMCO names a cluster.
    fn cluster_name(&self, cluster: u32) -> String {
        format!(
            "{}+{}",
            self.strings.get(self.clusters.provider(cluster)),
            self.strings.get(self.clusters.name(cluster))
        )
    }
}

/// Why the demand's pod after the first `hosted` finds no room.
fn no_room(demand: &Demand<'_>, resources: &[&str], hosted: i64) -> String {
    let asked: Vec<String> = demand
        .per_pod
        .iter()
        .map(|&(resource, amount)| format!("{} {amount}", resources[resource]))
        .collect();
    let on = if demand.labels.is_empty() {
        "no node has that much left"
    } else {
        "no node carrying its labels has that much left"
    };
    format!(
        "replica {} of {} of {} needs {} free on one node, and {on}",
        hosted + 1,
        demand.consumer.pods(),
        demand.consumer.workload,
        asked.join(", ")
    )
}

/// A cluster's nodes with what is still free on each, while one app's
/// pods are charged to them.
struct Ledger<'s> {
    nodes: Nodes<'s>,
    /// The cluster's nodes; the ledger's rows are in their order.
    of_cluster: core::ops::Range<u32>,
    /// Amounts per node row.
    resources: usize,
    /// A row of amounts per node, in [`Capacity::resources`] order.
    free: &'s mut Vec<i64>,
    eligible: &'s mut Vec<usize>,
}

impl Ledger<'_> {
    fn free(&self, node: usize, resource: usize) -> i64 {
        self.free[node * self.resources + resource]
    }

    /// Charges the demand's pods to the nodes, or says why it cannot.
    fn host(&mut self, demand: &Demand<'_>, resources: &[&str]) -> Result<(), String> {
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
