//! gac, EMCO's generic action controller, as a wasmco action controller.
//!
//! It serves EMCO's generic action controller API under a deployment intent
//! group (declared in `intents.json`):
//!
//! - `generic-k8s-intents/{genericK8sIntent}`: a named set of resources;
//!   the deployment intent group's `intents` document names the one this
//!   controller acts on (`gac: operator-gac-intent`).
//! - `…/resources/{genericResource}` (multipart, one `file`): an object of
//!   an app. `newObject: "true"`: the file (YAML or JSON) is a new object to
//!   add to the app; for a ConfigMap or Secret it may be left out, and the
//!   object starts empty, named `resourceGVK.name`. `newObject: "false"`:
//!   the app already has the object `resourceGVK` names (from its Helm
//!   chart), and the customizations patch it.
//! - `…/customizations/{customization}` (multipart, any number of `files`):
//!   which of the app's clusters (`clusterSpecific`, `clusterInfo`) get the
//!   resource, and what changes there: `patchType: json` applies
//!   `patchJson` (RFC 6902); `patchType: merge` applies each file as a
//!   Kubernetes strategic merge patch. A new ConfigMap's or Secret's files
//!   become its data, keyed by file name or by `dataKeyOptions`, except
//!   files flagged `mergePatch: "true"`, which are its merge patches.
//!
//! A new object goes to the clusters its customizations select, with the
//! customizations that select a cluster applied there one after the other,
//! in the order the host lists them; a new object without customizations
//! goes to every cluster of its app. An existing object is patched on the
//! clusters each customization selects that hold it.
//!
//! Where this differs from EMCO's gac, and why:
//! - `mode: deny` selects the app's clusters *other* than those named, as
//!   EMCO's design describes (EMCO's code selects none), and the provider is
//!   compared as well as the cluster name.
//! - A new object without customizations is added (EMCO adds none); with
//!   several customizations on one cluster, they all apply there, in order
//!   (EMCO writes the object once per customization, the last one winning,
//!   and lists it that many times in the deployment order).
//! - A template's other fields (labels, `binaryData`, …) are kept for a
//!   ConfigMap or Secret (EMCO keeps only name, namespace, annotations,
//!   type and data); a file that is not UTF-8 text goes to a ConfigMap's
//!   `binaryData`.
//! - An existing object that none of a customization's selected clusters
//!   holds is an error, as is a new object that a cluster already holds
//!   (EMCO skips the first and overwrites the second silently).
//! - `$(http…)$` patch values, which EMCO fetches over HTTP, are refused:
//!   a controller makes no network calls.

mod build;
mod clusters;
mod legacy;
mod legacy_intent;
mod patch;
mod run;
mod select;
mod spec;
mod state;
mod strategic;

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
use wasmco_guest::intents::IntentTree;

wasmco_guest::declare_intents!("../intents.json");

/// Whether the intent is gac's own document of before (a controller-intents
/// document the DIG names), not the tree of EMCO's kinds the host builds.
fn is_legacy(intent: &str) -> bool {
    // Only which keys are there matters: their values are skipped, not built.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Keys {
        deployment_intent_group: Option<serde::de::IgnoredAny>,
        resources: Option<serde::de::IgnoredAny>,
        customizations: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Keys>(intent).is_ok_and(|keys| {
        keys.deployment_intent_group.is_none()
            && (keys.resources.is_some() || keys.customizations.is_some())
    })
}

/// Adds and patches the resources of the generic k8s intent the deployment
/// names.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    // A tree the host built names the group: only a document that parses
    // to one without intents may be gac's own of before.
    let tree = IntentTree::parse_named(&request.intent);
    let could_be_legacy = match &tree {
        Ok(tree) => tree.intents.is_empty(),
        Err(_) => true,
    };
    if could_be_legacy && is_legacy(&request.intent) {
        return legacy::act(request);
    }
    let tree = tree.map_err(|e| ControllerError {
        message: format!("the gac intent tree is not valid: {e}"),
    })?;
    if tree.intents.is_empty() {
        return Err(ControllerError {
            message: format!(
                "the deployment intent group names generic k8s intent {}, which it does not have",
                tree.name
            ),
        });
    }
    run::act(request, &tree)
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct Gac;

    impl super::bindings::exports::wasmco::controller::action::Guest for Gac {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(Gac with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
