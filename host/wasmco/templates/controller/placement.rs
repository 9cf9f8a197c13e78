//! `__NAME__`, a wasmco placement controller.
//!
//! Its intent takes every app off the clusters that carry one of the labels:
//!
//! ```json
//! {"avoidLabels": ["maintenance"]}
//! ```
//!
//! Placement controllers run after generic placement and see where earlier
//! ones put each app (`request.current`). They answer with edits: place an
//! app on clusters (optionally as one anyOf group) or take it off.

use serde::Deserialize;
use wasmco_guest::StringTable;

mod bindings {
    wit_bindgen::generate!({ world: "placement-controller", path: "wit" });
}

use bindings::exports::wasmco::controller::placement::{
    Guest, PlacementEdit, PlacementRequest, UnplaceApp,
};
use bindings::wasmco::controller::types::ControllerError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Intent {
    avoid_labels: Vec<String>,
}

struct Controller;

impl Guest for Controller {
    fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
        let intent: Intent = serde_json::from_str(&request.intent).map_err(|e| ControllerError {
            message: format!("the intent is not valid: {e}"),
        })?;
        // Strings arrive once, sorted; compare their ids in the loop below.
        let strings = StringTable::new(&request.strings.data, &request.strings.ends);
        let clusters = wasmco_guest::clusters!(request.clusters);
        let avoided: Vec<u32> = intent
            .avoid_labels
            .iter()
            .filter_map(|label| strings.find(label))
            .collect();
        let mut edits = Vec::new();
        for placement in &request.current {
            let off: Vec<u32> = placement
                .clusters
                .iter()
                .copied()
                .filter(|&cluster| clusters.labels(cluster).iter().any(|l| avoided.contains(l)))
                .collect();
            if !off.is_empty() {
                edits.push(PlacementEdit::Unplace(UnplaceApp {
                    app: strings.get(placement.app).to_owned(),
                    clusters: off,
                }));
            }
        }
        Ok(edits)
    }
}

bindings::export!(Controller with_types_in bindings);
