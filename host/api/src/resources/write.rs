//! `POST` and `PUT`: read the body, check it, prepare it, store it.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use wasmco_core::Kind;
use wasmco_orchestrator::MachineChange;
use wasmco_store::db::{ResourceId, Write};

use super::incoming::parse_incoming;
use super::path::{PathValues, values};
use super::prepare::prepare;
use super::request::read_body;
use crate::error::ApiError;
use crate::state::AppState;
use crate::work::blocking;

/// `POST` on a collection.
pub async fn create(
    state: AppState,
    kind: Kind,
    path: PathValues,
    request: Request,
) -> Result<Response, ApiError> {
    let parent = values(path);
    let raw = read_body(kind, request).await?;
    let worker = state.clone();
    let (id, write, controller) = state
        .work
        .run(move || {
            let incoming = parse_incoming(kind, &parent, raw, true)?;
            let mut full = parent;
            full.extend(incoming.own.iter().cloned());
            let id = ResourceId::new(kind, full);
            let (body, controller) =
                prepare(&worker, &id, incoming.body, incoming.file.as_deref())?;
            let write = Write {
                body,
                references: incoming.references,
                file: incoming.file,
            };
            Ok::<_, ApiError>((id, write, controller))
        })
        .await??;
    let body = write.body.clone();
    let created = id.clone();
    store(&state, id, write, true).await?;
    // Live only once stored: a refused write leaves the old version serving.
    if let Some(uploaded) = controller {
        state.controllers.insert(uploaded.controller);
    }
    if kind == Kind::Cluster {
        // Starts its health probe.
        state
            .orchestrator
            .cluster_changed(&created.path[0], &created.path[1]);
    }
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// `PUT` on an item.
pub async fn update(
    state: AppState,
    kind: Kind,
    path: PathValues,
    request: Request,
) -> Result<Response, ApiError> {
    let full = values(path);
    let raw = read_body(kind, request).await?;
    let worker = state.clone();
    let (id, write, controller) = state
        .work
        .run(move || {
            let arity = kind.parent_arity();
            let incoming = parse_incoming(kind, &full[..arity], raw, false)?;
            if incoming.own != full[arity..] {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    name_field(kind),
                    format!(
                        "the body names {} but the path names {}; a resource cannot be renamed",
                        incoming.own.join("/"),
                        full[arity..].join("/")
                    ),
                ));
            }
            let id = ResourceId::new(kind, full);
            // A missing resource is a 404 before any work on the file (a
            // controller's component would otherwise be compiled first).
            worker.db.get_raw(&id)?;
            if let Some(deployment) = wasmco_orchestrator::ClusterDeploymentRef::of(&id) {
                let deployments = worker.orchestrator.cluster_deployments();
                deployments.check_idle(&deployment)?;
                deployments.check_request_change(&deployment, &incoming.body["spec"])?;
            }
            if let (Some(deployment), Some(file)) = (
                wasmco_orchestrator::ClusterDeploymentRef::of(&id),
                incoming.file.as_deref(),
            ) {
                worker
                    .orchestrator
                    .cluster_deployments()
                    .check_replacement(&deployment, file)?;
            }
            let file = match incoming.file {
                Some(file) => Some(file),
                // Kept, and checked again: the policy may have changed since.
                None if matches!(
                    kind,
                    Kind::Controller | Kind::Cluster | Kind::ClusterDeployment
                ) =>
                {
                    worker.db.file(&id)?
                }
                None => None,
            };
            let (body, controller) = prepare(&worker, &id, incoming.body, file.as_deref())?;
            let write = Write {
                body,
                references: incoming.references,
                file,
            };
            Ok((id, write, controller))
        })
        .await??;
    let body = write.body.clone();
    let changed = id.clone();
    store(&state, id, write, false).await?;
    if kind == Kind::Cluster {
        state
            .orchestrator
            .cluster_changed(&changed.path[0], &changed.path[1]);
    }
    if let Some(uploaded) = controller {
        state.controllers.insert(uploaded.controller);
    }
    Ok(axum::Json(body).into_response())
}

fn name_field(kind: Kind) -> &'static str {
    match kind {
        Kind::ClusterLabel => "clusterLabel",
        _ => "metadata.name",
    }
}

/// Stores `write` as `id`; a machine through the inventory, which keeps
/// the machines its clusters hold where they are.
async fn store(
    state: &AppState,
    id: ResourceId,
    write: Write,
    creating: bool,
) -> Result<(), ApiError> {
    if id.kind == Kind::Machine {
        let deployments = state.orchestrator.cluster_deployments();
        let change = match creating {
            true => MachineChange::Create(write),
            false => MachineChange::Update(write),
        };
        return crate::work::off_the_workers(move || {
            deployments.write_machine(&id.path[0], &id.path[1], change)
        })
        .await?
        .map_err(ApiError::from);
    }
    let db = state.db.clone();
    match creating {
        true => blocking(move || db.create(&id, write)).await,
        false => blocking(move || db.update(&id, write)).await,
    }
}
