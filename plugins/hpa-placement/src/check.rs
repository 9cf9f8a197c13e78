//! Checking one app's clusters against its hpa intents.

use std::collections::{BTreeMap, BTreeSet};

use wasmco_guest::{Clusters, StringTable};

use crate::capacity::Capacity;
use crate::demand::{Demand, no_room};
use crate::ledger::Ledger;
use crate::{AppPlacement, ControllerError, PlacementEdit, UnplaceApp};

/// Buffers one app's check reuses from cluster to cluster.
#[derive(Default)]
pub struct Scratch {
    checked: Vec<bool>,
    ledger: Vec<i64>,
    eligible: Vec<usize>,
}

/// Checks one app's clusters against its hpa intents.
pub struct AppCheck<'a> {
    pub app: &'a str,
    pub demands: Vec<Demand<'a>>,
    /// Whether no demand asks for a node label.
    pub label_free: bool,
    pub capacity: &'a Capacity<'a>,
    pub clusters: Clusters<'a>,
    pub strings: StringTable<'a>,
}

/// Why a cluster was ruled out.
struct Refusal<'a> {
    intent: &'a str,
    consumer: &'a str,
    reason: String,
}

impl<'a> AppCheck<'a> {
    /// Unplaces the clusters that cannot host the app; an error when that
    /// leaves a group without a cluster.
    pub fn filter(
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

pub fn error(message: String) -> ControllerError {
    ControllerError { message }
}
