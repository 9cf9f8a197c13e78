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

mod capacity;
mod check;
mod demand;
mod ledger;

use capacity::Capacity;
use check::{AppCheck, Scratch, error};
use demand::demands;
use model::HpaIntent;
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
