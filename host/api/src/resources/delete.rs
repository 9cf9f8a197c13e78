//! `DELETE` on an item, and what must be released or refused first.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use wasmco_core::Kind;
use wasmco_store::db::ResourceId;

use super::path::{PathValues, values};
use crate::error::ApiError;
use crate::state::AppState;
use crate::work::blocking;

/// `DELETE` on an item.
pub async fn delete(state: AppState, kind: Kind, path: PathValues) -> Result<Response, ApiError> {
    let id = ResourceId::new(kind, values(path));
    let dig = (kind == Kind::DeploymentIntentGroup)
        .then(|| wasmco_orchestrator::DigRef::from_path(&id.path));
    if let Some(dig) = &dig {
        let deployed = state.orchestrator.state(dig)?;
        if deployed.state.is_deployed() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "{} is {}; terminate it before deleting it",
                    id.describe(),
                    deployed.state
                ),
            ));
        }
    }
    if kind == Kind::Controller {
        refuse_orphaning_intents(&state, &id.path[0])?;
    }
    if kind == Kind::LogicalCloud {
        let lc = wasmco_orchestrator::LogicalCloudRef {
            project: id.path[0].clone(),
            name: id.path[1].clone(),
        };
        // Checked (and its context forgotten) before the resource goes: a
        // deployed logical cloud must be terminated first.
        state.orchestrator.release_logical_cloud(&lc)?;
    }
    if let Some(cert) = crate::ca_certs::cert_of(kind, &id.path) {
        // As a logical cloud: a deployed stage must be terminated first.
        state.orchestrator.release_ca_cert(&cert)?;
    }
    // Checked and deleted under their locks: a deploy picking machines or
    // a pick taking one could start between a check and the delete.
    let deployments = state.orchestrator.cluster_deployments();
    if let Some(deployment) = wasmco_orchestrator::ClusterDeploymentRef::of(&id) {
        crate::work::off_the_workers(move || deployments.forget(&deployment)).await??;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if kind == Kind::Machine {
        let (provider, machine) = (id.path[0].clone(), id.path[1].clone());
        crate::work::off_the_workers(move || {
            deployments.write_machine(
                &provider,
                &machine,
                wasmco_orchestrator::MachineChange::Delete,
            )
        })
        .await??;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if kind == Kind::Cluster {
        state
            .orchestrator
            .release_networks(&wasmco_orchestrator::NetworkSetRef {
                provider: id.path[0].clone(),
                cluster: id.path[1].clone(),
            })?;
    }
    let db = state.db.clone();
    let deleted = id.clone();
    blocking(move || db.delete(&deleted)).await?;
    if let Some(dig) = &dig {
        state.orchestrator.forget(dig)?;
    }
    if kind == Kind::Controller {
        state.controllers.remove(&id.path[0]);
    }
    if kind == Kind::Cluster {
        // A deployed cluster's addons leave the fleet with it.
        let deployments = state.orchestrator.cluster_deployments();
        let cluster = wasmco_core::ClusterRef::new(&id.path[0], &id.path[1]);
        crate::work::off_the_workers(move || deployments.forget_addons(&cluster)).await??;
        state.orchestrator.cluster_changed(&id.path[0], &id.path[1]);
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A controller cannot go while intents of kinds only it serves are
/// stored: nothing could read, change or delete them then, and their
/// deployment intent groups could not be deleted.
fn refuse_orphaning_intents(state: &AppState, controller: &str) -> Result<(), ApiError> {
    let catalog = state.orchestrator.intent_catalog()?;
    let Some(declared) = catalog.of(controller) else {
        return Ok(());
    };
    let alone: Vec<&str> = declared
        .declaration
        .top_segments()
        .filter(|segment| {
            catalog
                .serving_all(segment)
                .all(|other| other.controller == controller)
        })
        .collect();
    if alone.is_empty() {
        return Ok(());
    }
    let stored: Vec<String> = state
        .db
        .list_under(Kind::Intent, &[])?
        .into_iter()
        .filter(|(id, _)| id.path.len() == 6 && alone.contains(&id.path[4].as_str()))
        .map(|(id, _)| id.describe())
        .collect();
    if stored.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "controller {controller} serves intents that are stored ({}); delete them first",
            stored.join(", ")
        ),
    ))
}
