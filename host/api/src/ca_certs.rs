//! A caCert's enrollment and distribution (EMCO's ca-certs):
//! `POST …/ca-certs/{caCert}/{enrollment|distribution}/{action}` and their
//! `status`, for a cluster provider's caCerts and a project's alike.

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use wasmco_core::wire::{DeploymentState, DeploymentStatus, Subject};
use wasmco_orchestrator::{CaCertRef, CaCertScope, CertStage};
use wasmco_store::appcontext::DigState;

pub use wasmco_core::wire::CertAction;

use super::deployments::{StatusQuery, status_body};
use super::error::ApiError;
use super::state::AppState;

/// Both stages, by route.
pub const STAGES: [CertStage; 2] = [CertStage::Enrollment, CertStage::Distribution];

/// The path of a cluster provider's caCert.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCertPath {
    cluster_provider: String,
    ca_cert: String,
}

/// The path of a project's caCert.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectCertPath {
    project: String,
    ca_cert: String,
}

impl From<ProviderCertPath> for CaCertRef {
    fn from(path: ProviderCertPath) -> Self {
        CaCertRef {
            scope: CaCertScope::Provider(path.cluster_provider),
            name: path.ca_cert,
        }
    }
}

impl From<ProjectCertPath> for CaCertRef {
    fn from(path: ProjectCertPath) -> Self {
        CaCertRef {
            scope: CaCertScope::Project(path.project),
            name: path.ca_cert,
        }
    }
}

fn header_of(cert: &CaCertRef, stage: CertStage, state: &DigState) -> DeploymentState {
    let (cluster_provider, project) = match &cert.scope {
        CaCertScope::Provider(provider) => (Some(provider.clone()), None),
        CaCertScope::Project(project) => (None, Some(project.clone())),
    };
    state.answer(Subject {
        project,
        name: cert.name.clone(),
        cluster_provider,
        stage: Some(stage.route().to_owned()),
        ..Subject::default()
    })
}

/// `POST …/ca-certs/{caCert}/{stage}/{action}`.
pub async fn act(
    state: AppState,
    cert: CaCertRef,
    stage: CertStage,
    action: CertAction,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let actor = crate::auth::actor(&request);
    let orchestrator = state.orchestrator.clone();
    let target = cert.clone();
    let new_state = crate::work::off_the_workers(move || match action {
        CertAction::Instantiate => orchestrator.instantiate_ca_cert(&target, stage, actor),
        CertAction::Terminate => orchestrator.terminate_ca_cert(&target, stage, actor),
        CertAction::Update => orchestrator.update_ca_cert(&target, stage, actor),
    })
    .await??;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(header_of(&cert, stage, &new_state)),
    )
        .into_response())
}

/// `GET …/ca-certs/{caCert}/{stage}/status`: as a DIG's.
pub async fn status(
    state: AppState,
    cert: CaCertRef,
    stage: CertStage,
    query: Query<StatusQuery>,
) -> Result<axum::Json<DeploymentStatus>, ApiError> {
    let query = query.0.checked()?;
    let orchestrator = state.orchestrator.clone();
    let target = cert.clone();
    let (cert_state, synced) =
        crate::work::off_the_workers(move || orchestrator.ca_cert_status(&target, stage)).await??;
    Ok(axum::Json(status_body(
        header_of(&cert, stage, &cert_state),
        synced.as_ref(),
        &query,
    )))
}

/// The caCert a path names, for the two kinds that are caCerts.
pub fn cert_of(kind: wasmco_core::Kind, path: &[String]) -> Option<CaCertRef> {
    let scope = match kind {
        wasmco_core::Kind::CaCert => CaCertScope::Provider(path[0].clone()),
        wasmco_core::Kind::ProjectCaCert => CaCertScope::Project(path[0].clone()),
        _ => return None,
    };
    Some(CaCertRef {
        scope,
        name: path[1].clone(),
    })
}
