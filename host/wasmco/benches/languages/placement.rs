//! The languages benchmark's placement, in Rust on the SDK's records: each
//! app of the intent goes on the clusters with all of its `allOf` labels
//! and, when it has any, one of its `anyOf` labels. Replaces the
//! template's `src/lib.rs`.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmco_guest::records::Cluster;

mod bindings {
    wit_bindgen::generate!({ world: "placement-controller", path: "wit" });
}

use bindings::exports::wasmco::controller::placement::{
    Guest, PlaceApp, PlacementEdit, PlacementRequest,
};
use bindings::wasmco::controller::types::ControllerError;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    #[serde(default)]
    all_of: Vec<String>,
    #[serde(default)]
    any_of: Vec<String>,
}

struct Controller;

impl Guest for Controller {
    fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
        let rules: BTreeMap<String, Rule> = serde_json::from_str(&request.intent)
            .map_err(|e| ControllerError { message: e.to_string() })?;
        let view = wasmco_guest::view!(request);
        let edits = view.apps(&request.apps).filter_map(|app| {
            let rule = rules.get(app)?;
            let (all, any): (Vec<_>, Vec<_>) = (
                rule.all_of.iter().map(|l| view.label(l)).collect(),
                rule.any_of.iter().map(|l| view.label(l)).collect(),
            );
            let fits = |c: &Cluster| {
                all.iter().all(|&l| c.has(l)) && (any.is_empty() || any.iter().any(|&l| c.has(l)))
            };
            Some(wasmco_guest::place!(app, view.clusters().filter(fits)))
        });
        Ok(edits.collect())
    }
}

bindings::export!(Controller with_types_in bindings);
