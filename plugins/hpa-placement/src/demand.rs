//! What an app's consumers ask of a cluster, and how to say that a
//! cluster has no room for it.

use wasmco_guest::StringTable;

use crate::model::{Consumer, HpaIntent};

/// What one consumer of an app asks of a cluster, read once per app.
pub struct Demand<'a> {
    pub intent: &'a str,
    pub consumer: &'a Consumer,
    pub labels: Vec<(&'a str, &'a str)>,
    /// The same labels as string ids; `None` for a text the request does
    /// not hold, which no node carries.
    pub label_ids: Vec<(Option<u32>, Option<u32>)>,
    /// What one pod takes, by resource position in [`Capacity::resources`],
    /// in the order first asked. When two requirements name the same
    /// resource the later one wins, as it does in the Deployment hpa-action
    /// patches.
    pub per_pod: Vec<(usize, i64)>,
    /// For each of `per_pod`, what the app's earlier demands take of that
    /// resource once all their pods are placed on one node.
    pub before: Vec<i64>,
}

/// The demands of the app's consumers with at least one requirement, in
/// stored order.
pub fn demands<'a>(
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

/// Why the demand's pod after the first `hosted` finds no room.
pub fn no_room(demand: &Demand<'_>, resources: &[&str], hosted: i64) -> String {
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
