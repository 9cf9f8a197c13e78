//! A placement controller that connects where its intent says: it imports
//! `wasi:sockets`, which the host links with every address refused.
#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "placement-controller",
    path: "../../../wit",
});

use std::io::Write;

use exports::wasmco::controller::placement::{Guest, PlacementEdit, PlacementRequest};
use wasmco::controller::types::ControllerError;

struct Phones;

impl Guest for Phones {
    fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
        let mut stream =
            std::net::TcpStream::connect(&request.intent).map_err(|e| ControllerError {
                message: e.to_string(),
            })?;
        let _ = stream.write_all(request.intent.as_bytes());
        Ok(Vec::new())
    }
}

// Only a component has these exports: on the host, `cargo build --workspace`
// links this crate too, and the linker cannot take the WIT export names.
#[cfg(target_arch = "wasm32")]
export!(Phones);
