//! A placement controller that ranks clusters, for the rollout tests: each
//! app's allOf clusters are taken off and placed again with the intent's
//! `first` (cluster names) ahead of the rest, so a rollout whose `order`
//! is `placement` releases them first.
#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "placement-controller",
    path: "../../../wit",
});

use exports::wasmco::controller::placement::{
    Guest, PlaceApp, PlacementEdit, PlacementRequest, UnplaceApp,
};
use wasmco::controller::types::ControllerError;

struct Rank;

impl Guest for Rank {
    fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
        let intent: serde_json::Value = serde_json::from_str(&request.intent).unwrap_or_default();
        let first: Vec<&str> = intent["first"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .collect();
        let strings = wasmco_guest::StringTable::new(&request.strings.data, &request.strings.ends);
        let name = |cluster: u32| strings.get(request.clusters.name[cluster as usize]);
        let rank = |cluster: &u32| {
            first
                .iter()
                .position(|wanted| *wanted == name(*cluster))
                .unwrap_or(first.len())
        };
        let mut edits = Vec::new();
        // anyOf groups are left as they are: only allOf placements rank.
        for placement in request.current.iter().filter(|p| p.groups.is_empty()) {
            let mut ranked = placement.clusters.clone();
            ranked.sort_by_key(rank);
            let app = strings.get(placement.app).to_owned();
            edits.push(PlacementEdit::Unplace(UnplaceApp {
                app: app.clone(),
                clusters: placement.clusters.clone(),
            }));
            edits.push(PlacementEdit::Place(PlaceApp {
                app,
                clusters: ranked,
                group: None,
            }));
        }
        Ok(edits)
    }
}

export!(Rank);
