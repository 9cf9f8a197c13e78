//! ovnaction, EMCO's OVN action controller, as a wasmco action controller.
//!
//! Its intents hang under a deployment intent group, as EMCO's do:
//!
//! ```text
//! …/network-controller-intent/{netControllerIntent}
//!     /workload-intents/{workloadIntent}      {app, workloadResource, type}
//!         /interfaces/{interfaceIntent}       {interface, name, defaultGateway, ipAddress, macAddress}
//! ```
//!
//! For each workload intent of the network controller intent the deployment
//! names, on every cluster its app is placed on, the resource
//! `workloadResource` of kind `type` (spelled as the resource's `kind`,
//! case included) gets two annotations where its pods get them (the pod
//! template, a CronJob's job template, a Pod's own metadata, or
//! `spec.template` of a custom kind), exactly as EMCO writes them:
//!
//! - `k8s.plugin.opnfv.org/nfn-network`: `{"type":"ovn4nfv","interface":[…]}`,
//!   the interfaces already there merged with the intent's;
//! - `k8s.v1.cni.cncf.io/networks`: the networks already there plus
//!   `{"name":"ovn-networkobj","namespace":"default","cni-args":null}`,
//!   unless the cluster's key/value pairs say Multus is not in use
//!   (`CNI-Networking-Nodus-CNI-For-all-interfaces` true, or a
//!   `CNI-Networking-Multi-CNI-Wrapper` other than `multus`).
//!
//! The edits are JSON merge patches of those annotations, one for all the
//! app's clusters when they all get the same values, else one per set of
//! clusters that do.
//!
//! As EMCO, it passes over a workload intent without interfaces and a
//! cluster lacking the resource, and drops an unreadable annotation of a
//! built-in kind; it says so on stderr, which the host logs. Unlike EMCO,
//! which logs and writes nothing, it fails when the resource is on none of
//! the app's clusters (a misspelt `type` is the usual cause), when the kind
//! has no pods, when a custom kind has no `spec.template` (EMCO would write
//! `null` over the resource) and when a custom kind's existing annotation
//! cannot be read; and it also annotates the pod templates of the older
//! `apps`/`extensions` versions and of `batch/v1` CronJobs, which EMCO's
//! Go types leave alone.

mod cni;
mod copies;
mod gojson;
mod networks;
mod nfn;
mod spec;
mod workload;
mod workspace;

use wasmco_guest::intents::IntentTree;

pub use cni::{MULTI_CNI_WRAPPER, NODUS_FOR_ALL_INTERFACES};
pub use networks::{OVN_NETWORK_NAME, OVN_NETWORK_NAMESPACE};
pub use nfn::NfnInterface;
pub use workload::{NETWORKS_ANNOTATION, NFN_ANNOTATION};

use spec::{WORKLOAD_INTENTS, WorkloadSpec, interfaces};
use workspace::Workspace;

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "action-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

pub use bindings::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AppResources, ClusterScope, Patch, PatchResource,
};
pub use bindings::wasmco::controller::types::{
    ClusterTable, ControllerError, Resource, ResourceRef, Strings,
};

wasmco_guest::declare_intents!("../intents.json");

/// Annotates the workloads of the network controller intent the deployment
/// names.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let tree = IntentTree::parse_named(&request.intent)
        .map_err(|e| error(format!("the ovnaction intent tree is not valid: {e}")))?;
    if tree.intents.is_empty() {
        return Err(error(format!(
            "network controller intent {:?} not found in deployment intent group {:?}",
            tree.name, tree.deployment_intent_group.name
        )));
    }
    let mut workspace = Workspace::new(request);
    let mut edits = Vec::new();
    for controller_intent in &tree.intents {
        for workload_intent in controller_intent.children(WORKLOAD_INTENTS) {
            let context = |reason: String| {
                error(format!(
                    "workload intent {:?} of network controller intent {:?}: {reason}",
                    workload_intent.name(),
                    controller_intent.name()
                ))
            };
            let spec: WorkloadSpec = serde::Deserialize::deserialize(&workload_intent.spec)
                .map_err(|e| context(format!("spec is not valid: {e}")))?;
            let interfaces = interfaces(workload_intent).map_err(context)?;
            let mut notes = Vec::new();
            if interfaces.is_empty() {
                // EMCO passes over it with a warning.
                notes.push("it has no interface intents; nothing to do".to_owned());
            } else {
                edits.extend(
                    workspace
                        .annotate(&spec, &interfaces, &mut notes)
                        .map_err(context)?,
                );
            }
            // Clusters sharing a copy may have noted the same thing.
            let mut seen = std::collections::BTreeSet::new();
            notes.retain(|note| seen.insert(note.clone()));
            for note in notes {
                // The host logs what a controller writes to stderr.
                eprintln!(
                    "workload intent {:?} of network controller intent {:?}: {note}",
                    workload_intent.name(),
                    controller_intent.name()
                );
            }
        }
    }
    Ok(edits)
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct OvnAction;

    impl super::bindings::exports::wasmco::controller::action::Guest for OvnAction {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(OvnAction with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
