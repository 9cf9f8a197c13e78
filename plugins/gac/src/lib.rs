//! gac, EMCO's generic action controller, as a wasmco action controller.
//!
//! It adds resources to an app and customises an app's resources with an
//! RFC 6902 JSON Patch or an RFC 7386 merge patch, on every cluster the app is
//! placed on or only on the clusters a selector picks:
//!
//! ```json
//! {"resources": [{"app": "web", "manifest": {"apiVersion": "v1", "kind": "ConfigMap",
//!                  "metadata": {"name": "extra"}, "data": {"k": "v"}},
//!                 "clusterSpecific": true,
//!                 "clusterInfo": {"scope": "label", "clusterProvider": "p",
//!                                 "clusterLabel": "edge", "mode": "allow"}}],
//!  "customizations": [{"app": "web", "target": {"kind": "Deployment", "name": "web"},
//!                      "patchType": "merge", "patch": {"spec": {"replicas": 3}}}]}
//! ```
//!
//! `clusterInfo` follows EMCO's gac: `scope` is `name` or `label`, `mode`
//! `allow` (only the selected clusters) or `deny` (all but them).

mod intent;

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
use wasmco_guest::{Clusters, StringTable};

use intent::{ClusterInfo, GacIntent, Mode, PatchType, Scope, selection};

/// Computes the edits for every resource and customisation in the intent.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let intent: GacIntent = serde_json::from_str(&request.intent)
        .map_err(|e| error(format!("gac intent is not valid: {e}")))?;
    let mut edits = Vec::new();
    for (position, added) in intent.resources.iter().enumerate() {
        let Some(scope) = scope_for(
            request,
            &added.app,
            selection(&added.cluster_info, &added.cluster_specific),
        )
        .map_err(|e| error(format!("resources[{position}]: {e}")))?
        else {
            continue;
        };
        edits.push(ActionEdit::Add(AddResource {
            app: added.app.clone(),
            scope,
            manifest: added.manifest.to_string(),
        }));
    }
    for (position, custom) in intent.customizations.iter().enumerate() {
        let Some(scope) = scope_for(
            request,
            &custom.app,
            selection(&custom.cluster_info, &custom.cluster_specific),
        )
        .map_err(|e| error(format!("customizations[{position}]: {e}")))?
        else {
            continue;
        };
        let patch = match custom.patch_type {
            PatchType::Json if custom.patch.is_array() => {
                Patch::JsonPatch(custom.patch.to_string())
            }
            PatchType::Merge if custom.patch.is_object() => {
                Patch::MergePatch(custom.patch.to_string())
            }
            PatchType::Json => {
                return Err(error(format!(
                    "customizations[{position}]: a json patch must be an array of operations"
                )));
            }
            PatchType::Merge => {
                return Err(error(format!(
                    "customizations[{position}]: a merge patch must be an object"
                )));
            }
        };
        edits.push(ActionEdit::Patch(PatchResource {
            app: custom.app.clone(),
            scope,
            target: ResourceRef {
                kind: custom.target.kind.clone(),
                name: custom.target.name.clone(),
            },
            patch,
        }));
    }
    Ok(edits)
}

/// The clusters an edit for `app` applies to; `None` when a selector leaves
/// none of the app's clusters, so the edit has nothing to do.
fn scope_for(
    request: &ActionRequest,
    app: &str,
    cluster_info: Option<&ClusterInfo>,
) -> Result<Option<ClusterScope>, String> {
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let clusters: Clusters<'_> = wasmco_guest::clusters!(request.clusters);
    let placement = request
        .placements
        .iter()
        .find(|p| strings.get(p.app) == app)
        .ok_or_else(|| format!("app {app:?} is not placed in this deployment"))?;
    let Some(info) = cluster_info else {
        return Ok(Some(ClusterScope::All));
    };
    let selected: Vec<u32> = placement
        .clusters
        .iter()
        .map(|placed| placed.cluster)
        .filter(|&index| {
            if index as usize >= clusters.len() {
                return false;
            }
            let matches = strings.get(clusters.provider(index)) == info.cluster_provider
                && match info.scope {
                    Scope::Name => {
                        info.cluster.as_deref() == Some(strings.get(clusters.name(index)))
                    }
                    Scope::Label => info.cluster_label.as_deref().is_some_and(|label| {
                        clusters
                            .labels(index)
                            .iter()
                            .any(|&l| strings.get(l) == label)
                    }),
                };
            matches == (info.mode == Mode::Allow)
        })
        .collect();
    Ok((!selected.is_empty()).then_some(ClusterScope::Only(selected)))
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
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
