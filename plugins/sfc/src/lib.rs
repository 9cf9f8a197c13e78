//! sfc, EMCO's service function chaining controller, as a wasmco action
//! controller.
//!
//! It serves EMCO's sfc intents under a deployment intent group (see
//! `intents.json`): a network chain holds its links (each a function app
//! between two networks, with the label its pods carry), and at each end
//! its client selectors and provider networks. As EMCO's, it acts on every
//! chain of the deployment, whatever name the `intents` document gives.
//!
//! For each chain it adds Nodus' `NetworkChaining` (`k8s.plugin.opnfv.org/
//! v1alpha1`) on the clusters where every function app is placed: its
//! `networkChain` walks the links from the one network no link leads to
//! (`net=a,app=f1,net=b,app=f2,net=c`), its `left` and `right` are the
//! end's client selectors, the end's provider networks filling in their
//! network, gateway and subnet in order (the extra ones after). The host
//! hands children over in name order; EMCO takes them in the order they
//! were made. And it sets
//! each link's label on the pod template of the function's workload there.
//!
//! EMCO puts the chain in an app of its own; wasmco's action edits change
//! the deployment's apps, so the chain goes with the head function's app
//! (on those clusters only) and leaves with it.

mod chain;

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
    ActionEdit, ActionRequest, AddResource, ClusterScope, Patch, PatchResource,
};
pub use bindings::wasmco::controller::types::{
    ClusterTable, ControllerError, ResourceRef, Strings,
};
use serde_json::json;
use wasmco_guest::StringTable;
use wasmco_guest::intents::IntentTree;

use chain::{Chain, Link};

wasmco_guest::declare_intents!("../intents.json");

/// Adds each chain's NetworkChaining and labels its functions' pods.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let tree = IntentTree::parse_all(&request.intent)
        .map_err(|e| error(format!("the sfc intent tree is not valid: {e}")))?;
    // Every top-level intent of this controller is a chain.
    let chains = &tree.all;
    if chains.is_empty() {
        return Err(error(format!(
            "no sfc intents (network-chains) are defined for deployment intent group {:?}",
            tree.deployment_intent_group.name
        )));
    }
    let mut edits = Vec::new();
    for node in chains {
        let chain = Chain::read(node)
            .map_err(|reason| error(format!("sfc intent {:?}: {reason}", node.name())))?;
        edits.extend(
            chain_edits(request, &chain)
                .map_err(|reason| error(format!("sfc intent {:?}: {reason}", chain.name)))?,
        );
    }
    Ok(edits)
}

/// The clusters in every one of `placements`, in the first one's order;
/// counted rather than searched for, as there may be thousands.
fn placed_everywhere(placements: &[Vec<u32>]) -> Vec<u32> {
    let size = placements
        .iter()
        .flatten()
        .max()
        .map_or(0, |&most| most as usize + 1);
    let mut count = vec![0usize; size];
    let mut seen = vec![usize::MAX; size];
    for (index, clusters) in placements.iter().enumerate() {
        for &cluster in clusters {
            // A cluster listed twice for one app counts once.
            if std::mem::replace(&mut seen[cluster as usize], index) != index {
                count[cluster as usize] += 1;
            }
        }
    }
    let Some(first) = placements.first() else {
        return Vec::new();
    };
    let mut taken = vec![false; size];
    first
        .iter()
        .copied()
        .filter(|&c| count[c as usize] == placements.len())
        .filter(|&c| !std::mem::replace(&mut taken[c as usize], true))
        .collect()
}

/// The edits of one chain.
fn chain_edits(request: &ActionRequest, chain: &Chain) -> Result<Vec<ActionEdit>, String> {
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let placed = |app: &str| -> Vec<u32> {
        strings
            .find(app)
            .and_then(|id| request.placements.iter().find(|p| p.app == id))
            .map(|p| p.clusters.clone())
            .unwrap_or_default()
    };
    // Each function's clusters, read once.
    let placements: Vec<Vec<u32>> = chain.links.iter().map(|l| placed(&l.app)).collect();
    let clusters = placed_everywhere(&placements);
    if clusters.is_empty() {
        return Err(format!(
            "there are no clusters with all the apps of the chain ({})",
            chain
                .links
                .iter()
                .map(|l| l.app.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let placed_on = |app: &str| match chain.links.iter().position(|l| l.app == app) {
        Some(link) => placements[link].len(),
        None => placed(app).len(),
    };
    let scope_for = |app: &str| {
        if placed_on(app) == clusters.len() {
            ClusterScope::All
        } else {
            ClusterScope::Only(clusters.clone())
        }
    };
    let head = chain.head_app();
    let mut edits = vec![ActionEdit::Add(AddResource {
        app: head.to_owned(),
        scope: scope_for(head),
        manifest: chain.manifest().to_string(),
    })];
    for link in &chain.links {
        edits.push(label_edit(request, &strings, link, scope_for(&link.app))?);
    }
    Ok(edits)
}

/// The patch that gives the pods of `link`'s workload the link's label.
fn label_edit(
    request: &ActionRequest,
    strings: &StringTable<'_>,
    link: &Link,
    scope: ClusterScope,
) -> Result<ActionEdit, String> {
    let Some((key, value)) = link.label() else {
        return Err(format!(
            "link {:?}: linkLabel {:?} is not key=value",
            link.name, link.link_label
        ));
    };
    let patch =
        wasmco_guest::pods::metadata_patch(&link.resource_type, json!({"labels": {key: value}}))
            .ok_or_else(|| {
                format!(
                    "link {:?}: {} is not a kind whose pods sfc can label (Deployment, DaemonSet, \
                     StatefulSet, ReplicaSet, Job, CronJob, ReplicationController, Pod)",
                    link.name, link.resource_type
                )
            })?;
    if !has_resource(
        request,
        strings,
        &link.app,
        &link.resource_type,
        &link.workload_resource,
    ) {
        return Err(format!(
            "link {:?}: app {:?} has no {} {:?}",
            link.name, link.app, link.resource_type, link.workload_resource
        ));
    }
    Ok(ActionEdit::Patch(PatchResource {
        app: link.app.clone(),
        scope,
        target: ResourceRef {
            kind: link.resource_type.clone(),
            name: link.workload_resource.clone(),
        },
        patch: Patch::MergePatch(patch.to_string()),
    }))
}

/// Whether `app` renders a `kind` called `name` (on any of its clusters).
fn has_resource(
    request: &ActionRequest,
    strings: &StringTable<'_>,
    app: &str,
    kind: &str,
    name: &str,
) -> bool {
    let Some(id) = strings.find(app) else {
        return false;
    };
    request
        .resources
        .iter()
        .filter(|r| r.app == id)
        .flat_map(|r| {
            r.base
                .iter()
                .chain(r.differing.iter().flat_map(|d| &d.resources))
        })
        .any(|r| r.kind == kind && r.name == name)
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct Sfc;

    impl super::bindings::exports::wasmco::controller::action::Guest for Sfc {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(Sfc with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
