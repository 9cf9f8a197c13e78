//! `__NAME__`, a wasmco gate controller.
//!
//! A progressive rollout asks its gates, each time a group of clusters is
//! Ready, whether the next group goes. This one soaks: the next group goes
//! once the last has been Ready for the intent's `soakSeconds`; it is held
//! while a released cluster is unreachable; and the rollout stops when an
//! app failed on any released cluster:
//!
//! ```json
//! {"soakSeconds": 30}
//! ```

use serde::Deserialize;
use wasmco_guest::StringTable;

mod bindings {
    wit_bindgen::generate!({ world: "gate-controller", path: "wit" });
}

use bindings::exports::wasmco::controller::gate::{GateRequest, Guest, Verdict, WaitFor};
use bindings::wasmco::controller::types::ControllerError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Intent {
    soak_seconds: u64,
}

/// How soon to ask again while a released cluster is unreachable.
const UNREACHABLE_RETRY_MS: u32 = 5_000;

struct Controller;

impl Guest for Controller {
    fn check(request: GateRequest) -> Result<Verdict, ControllerError> {
        let intent: Intent = serde_json::from_str(&request.intent).map_err(|e| ControllerError {
            message: format!("the intent is not valid: {e}"),
        })?;
        let strings = StringTable::new(&request.strings.data, &request.strings.ends);
        let cluster = |index: u32| {
            let index = index as usize;
            let provider = strings.get(request.clusters.provider[index]);
            format!("{provider}/{}", strings.get(request.clusters.name[index]))
        };
        if let Some(cell) = request.cells.iter().find(|cell| cell.failed > 0) {
            return Ok(Verdict::Abort(format!(
                "{} failed on {} ({} of {} resources)",
                strings.get(cell.app),
                cluster(cell.cluster),
                cell.failed,
                cell.resources
            )));
        }
        if let Some(&away) = request.unreachable.first() {
            return Ok(Verdict::Wait(WaitFor {
                reason: format!("{} is unreachable", cluster(away)),
                retry_after_ms: UNREACHABLE_RETRY_MS,
            }));
        }
        let soak_ms = intent.soak_seconds.saturating_mul(1000);
        if request.ready_ms < soak_ms {
            return Ok(Verdict::Wait(WaitFor {
                reason: format!(
                    "group {} Ready for {} s of {} s",
                    request.group,
                    request.ready_ms / 1000,
                    intent.soak_seconds
                ),
                retry_after_ms: u32::try_from(soak_ms - request.ready_ms).unwrap_or(u32::MAX),
            }));
        }
        Ok(Verdict::Proceed)
    }
}

bindings::export!(Controller with_types_in bindings);
