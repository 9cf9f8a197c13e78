//! The DIG a request names, and its state as the API answers it.

use serde::Deserialize;

use wasmco_core::wire::{DeploymentState, Subject};
use wasmco_orchestrator::DigRef;
use wasmco_store::appcontext::DigState;

/// The path parameters of a DIG.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DigPath {
    project: String,
    composite_app: String,
    composite_app_version: String,
    deployment_intent_group: String,
}

impl From<DigPath> for DigRef {
    fn from(p: DigPath) -> Self {
        DigRef {
            project: p.project,
            composite_app: p.composite_app,
            version: p.composite_app_version,
            name: p.deployment_intent_group,
        }
    }
}

/// A DIG's state as the API answers it, naming the DIG.
pub(super) fn state_body(dig: &DigRef, state: &DigState) -> DeploymentState {
    state.answer(Subject {
        project: Some(dig.project.clone()),
        composite_app: Some(dig.composite_app.clone()),
        composite_app_version: Some(dig.version.clone()),
        name: dig.name.clone(),
        ..Subject::default()
    })
}
