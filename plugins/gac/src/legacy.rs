//! gac's own intent format from before it served EMCO's kinds: one
//! document of `resources` and `customizations`, stored as a DIG's
//! controller-intents. Deployments that name such a document keep working.
//!
//! ```json
//! {"resources": [{"app": "web", "manifest": {"apiVersion": "v1", "kind": "ConfigMap",
//!                  "metadata": {"name": "extra"}, "data": {"k": "v"}}}],
//!  "customizations": [{"app": "web", "target": {"kind": "Deployment", "name": "web"},
//!                      "patchType": "merge", "patch": {"spec": {"replicas": 3}}}]}
//! ```

use crate::{
    ActionEdit, ActionRequest, AddResource, ClusterScope, ControllerError, Patch, PatchResource,
    ResourceRef,
};
use wasmco_guest::{Clusters, StringTable};

use crate::legacy_intent::{ClusterInfo, GacIntent, Mode, PatchType, Scope, selection};

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
        .copied()
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
