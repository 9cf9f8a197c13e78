//! A placement controller that reads the file its intent names: it imports
//! `wasi:filesystem`, which the host links with no directory behind it.
#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "placement-controller",
    path: "../../../wit",
});

use exports::wasmco::controller::placement::{Guest, PlacementEdit, PlacementRequest};
use wasmco::controller::types::ControllerError;

struct ReadsFiles;

impl Guest for ReadsFiles {
    fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
        let secret = std::fs::read_to_string(&request.intent).map_err(|e| ControllerError {
            message: e.to_string(),
        })?;
        Err(ControllerError { message: secret })
    }
}

// Only a component has these exports: on the host, `cargo build --workspace`
// links this crate too, and the linker cannot take the WIT export names.
#[cfg(target_arch = "wasm32")]
export!(ReadsFiles);
