//! The controller pipeline of one instantiate: placement controllers, then
//! settling anyOf groups, then action controllers.
//!
//! It works on a copy of the draft; the caller's draft changes only when every
//! controller succeeded and every edit was valid.

use wasmco_runtime::{CallError, CallFailure, Controller, ControllerKind, ControllerLog};

use crate::budget::EditLimits;
use crate::draft::{ClusterNodes, DraftContext};

/// One controller to call, with the intent addressed to it.
#[derive(Debug)]
pub struct Step<'a> {
    /// The controller.
    pub controller: &'a Controller,
    /// Its intent document, as JSON.
    pub intent: String,
    /// The nodes of the draft's clusters, for a controller that asks for
    /// them; `None` for one that does not.
    pub nodes: Option<&'a ClusterNodes>,
}

/// What one controller did in a successful pipeline.
#[derive(Debug)]
pub struct ControllerRun {
    /// The controller's name.
    pub controller: String,
    /// Placement or action.
    pub kind: ControllerKind,
    /// How long its call and its edits took, in seconds.
    pub seconds: f64,
    /// How many edits it returned.
    pub edits: usize,
    /// What it printed.
    pub log: ControllerLog,
}

/// Runs `steps` in the order given (the caller sorts them: placement before
/// action, each by priority). Placement settles after the last placement step.
pub fn run_controllers(
    draft: &mut DraftContext,
    steps: &[Step<'_>],
) -> Result<Vec<ControllerRun>, CallError> {
    let mut work = draft.clone();
    let mut runs = Vec::with_capacity(steps.len());
    let mut settled = false;
    for step in steps {
        let controller = step.controller;
        let started = std::time::Instant::now();
        let span = tracing::info_span!("controller", controller = %controller.name(), kind = %controller.kind());
        let _entered = span.enter();
        let run = match controller.kind() {
            ControllerKind::Placement => {
                if settled {
                    return Err(CallError {
                        controller: controller.name().to_owned(),
                        failure: CallFailure::Refused {
                            message: "placement controllers must run before action controllers"
                                .into(),
                        },
                        log: ControllerLog::default(),
                    });
                }
                let request = work.placement_request_with_nodes(step.intent.clone(), step.nodes);
                let output = controller.place(&request)?;
                work.apply_placement_within(&output.value, edit_limits(controller))
                    .map_err(|e| invalid_edit(controller, e, &output.log))?;
                ControllerRun {
                    controller: controller.name().to_owned(),
                    kind: controller.kind(),
                    seconds: started.elapsed().as_secs_f64(),
                    edits: output.value.len(),
                    log: output.log,
                }
            }
            ControllerKind::Action => {
                if !settled {
                    work.settle_placement();
                    settled = true;
                }
                let (request, clusters) =
                    work.action_request_with_nodes(step.intent.clone(), step.nodes);
                let output = controller.act(&request)?;
                work.apply_actions_within(&output.value, &clusters, edit_limits(controller))
                    .map_err(|e| invalid_edit(controller, e, &output.log))?;
                ControllerRun {
                    controller: controller.name().to_owned(),
                    kind: controller.kind(),
                    seconds: started.elapsed().as_secs_f64(),
                    edits: output.value.len(),
                    log: output.log,
                }
            }
            ControllerKind::Gate => {
                return Err(CallError {
                    controller: controller.name().to_owned(),
                    failure: CallFailure::Refused {
                        message: "a gate controller decides between a rollout's groups; name it in a rollout intent's gates".into(),
                    },
                    log: ControllerLog::default(),
                });
            }
        };
        tracing::info!(edits = run.edits, seconds = run.seconds, "controller ran");
        runs.push(run);
    }
    if !settled {
        work.settle_placement();
    }
    *draft = work;
    Ok(runs)
}

/// What a call's edits may make the host do, from the controller's limits.
fn edit_limits(controller: &Controller) -> EditLimits {
    let limits = controller.limits();
    EditLimits {
        max_edits: limits.max_edits as usize,
        output_bytes: limits.output_bytes,
        manifest_bytes: limits.manifest_bytes as usize,
    }
}

fn invalid_edit(
    controller: &Controller,
    error: crate::draft::EditError,
    log: &ControllerLog,
) -> CallError {
    controller.record_invalid_edit();
    CallError {
        controller: controller.name().to_owned(),
        failure: CallFailure::InvalidEdit {
            reason: error.to_string(),
        },
        log: log.clone(),
    }
}
