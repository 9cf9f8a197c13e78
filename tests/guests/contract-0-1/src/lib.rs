//! An action controller built against the contract of before,
//! `wasmco:controller@0.1.0`, where a placement is a list of records: it
//! adds to each app a ConfigMap that writes down the placement it was
//! given, cluster by cluster with the anyOf group of each, on exactly those
//! clusters. The host must still run it, converting request and answer.
#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "action-controller",
    path: "../../../host/runtime/wit/0.1.0",
});

use exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AddResource, ClusterScope, Guest,
};
use wasmco::controller::types::ControllerError;

struct WritesPlacements;

impl Guest for WritesPlacements {
    fn act(request: ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
        let text = |id: u32| {
            let ends = &request.strings.ends;
            let end = ends[id as usize] as usize;
            let start = if id == 0 {
                0
            } else {
                ends[id as usize - 1] as usize
            };
            request.strings.data[start..end].to_owned()
        };
        Ok(request
            .placements
            .iter()
            .map(|placement| {
                let placed: Vec<String> = placement
                    .clusters
                    .iter()
                    .map(|placed| match placed.group {
                        Some(group) => format!("{}@{}", placed.cluster, text(group)),
                        None => placed.cluster.to_string(),
                    })
                    .collect();
                let app = text(placement.app);
                let manifest = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"placed-{app}"}},"data":{{"placed":"{}"}}}}"#,
                    placed.join(",")
                );
                ActionEdit::Add(AddResource {
                    app,
                    scope: ClusterScope::Only(
                        placement.clusters.iter().map(|placed| placed.cluster).collect(),
                    ),
                    manifest,
                })
            })
            .collect())
    }
}

// Only a component has these exports: on the host, `cargo build --workspace`
// links this crate too, and the linker cannot take the WIT export names.
#[cfg(target_arch = "wasm32")]
export!(WritesPlacements);
