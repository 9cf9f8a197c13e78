//! `team-labels`, a wasmco action controller.
//!
//! Its intent adds labels to every resource of the apps it names (every app
//! when `apps` is left out), on every cluster they are placed on:
//!
//! ```json
//! {"labels": {"team": "payments"}, "apps": ["web"]}
//! ```
//!
//! Action controllers run after placement. They see each app's manifests
//! and answer with edits: add a resource, patch one (JSON Patch or merge
//! patch), or remove one, on all of an app's clusters or on some.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmco_guest::StringTable;

mod bindings {
    wit_bindgen::generate!({ world: "action-controller", path: "../../../wit" });
}

use bindings::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, ClusterScope, Guest, Patch, PatchResource,
};
use bindings::wasmco::controller::types::{ControllerError, ResourceRef};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Intent {
    labels: BTreeMap<String, String>,
    #[serde(default)]
    apps: Option<Vec<String>>,
}

struct Controller;

impl Guest for Controller {
    fn act(request: ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
        let fail = |message: String| ControllerError { message };
        let intent: Intent = serde_json::from_str(&request.intent)
            .map_err(|e| fail(format!("the intent is not valid: {e}")))?;
        let strings = StringTable::new(&request.strings.data, &request.strings.ends);
        let known: Vec<&str> = request.apps.iter().map(|&app| strings.get(app)).collect();
        for app in intent.apps.iter().flatten() {
            if !known.contains(&app.as_str()) {
                return Err(fail(format!("app {app:?} is not part of this deployment")));
            }
        }
        let patch = serde_json::json!({"metadata": {"labels": intent.labels}}).to_string();
        let mut edits = Vec::new();
        for app in &request.resources {
            let name = strings.get(app.app);
            if intent.apps.as_ref().is_some_and(|apps| !apps.iter().any(|a| a == name)) {
                continue;
            }
            for resource in &app.base {
                edits.push(ActionEdit::Patch(PatchResource {
                    app: name.to_owned(),
                    scope: ClusterScope::All,
                    target: ResourceRef {
                        kind: resource.kind.clone(),
                        name: resource.name.clone(),
                    },
                    patch: Patch::MergePatch(patch.clone()),
                }));
            }
        }
        Ok(edits)
    }
}

bindings::export!(Controller with_types_in bindings);
