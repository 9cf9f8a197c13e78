//! A gate controller for the rollout tests. The intent says what it does:
//! `{"do": "soak", "readyMs": N}` waits until the group has been Ready for
//! N milliseconds, then proceeds (aborting if a cell failed);
//! `{"do": "trap"}` panics; anything else proceeds.
#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "gate-controller",
    path: "../../../wit",
});

use exports::wasmco::controller::gate::{GateRequest, Guest, Verdict, WaitFor};
use wasmco::controller::types::ControllerError;

struct Gate;

impl Guest for Gate {
    fn check(request: GateRequest) -> Result<Verdict, ControllerError> {
        let intent: serde_json::Value = serde_json::from_str(&request.intent).unwrap_or_default();
        match intent["do"].as_str().unwrap_or("proceed") {
            "trap" => panic!("the gate broke on group {}", request.group),
            "soak" => {
                if let Some(cell) = request.cells.iter().find(|c| c.failed > 0) {
                    let strings = wasmco_guest::StringTable::new(
                        &request.strings.data,
                        &request.strings.ends,
                    );
                    let cluster = request.clusters.name[cell.cluster as usize];
                    return Ok(Verdict::Abort(format!(
                        "{} failed on {}",
                        strings.get(cell.app),
                        strings.get(cluster)
                    )));
                }
                let soak = intent["readyMs"].as_u64().unwrap_or(0);
                if request.ready_ms < soak {
                    return Ok(Verdict::Wait(WaitFor {
                        reason: format!(
                            "group {} Ready for {} ms of {soak}",
                            request.group, request.ready_ms
                        ),
                        retry_after_ms: (soak - request.ready_ms).min(u64::from(u32::MAX)) as u32,
                    }));
                }
                Ok(Verdict::Proceed)
            }
            _ => Ok(Verdict::Proceed),
        }
    }
}

export!(Gate);
