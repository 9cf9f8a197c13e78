//! The body as stored, with what the server adds after checking it
//! against its own state: a kubeconfig's verdict, a component's digest.

use axum::http::StatusCode;
use serde_json::{Value, json};

use wasmco_core::files::AppFileKind;
use wasmco_core::intents::Declaration;
use wasmco_core::{ControllerSpec, FieldError, Kind};
use wasmco_runtime::Controller;
use wasmco_runtime::helm::HelmError;
use wasmco_store::db::ResourceId;

use crate::error::ApiError;
use crate::state::AppState;

/// The body as stored: a cluster's kubeconfig is checked against the
/// server's policy and its verdict added; a controller's component is
/// compiled and checked now and its digest, size and effective limits are
/// added. Runs on the work pool.
pub(super) fn prepare(
    state: &AppState,
    id: &ResourceId,
    body: Value,
    file: Option<&[u8]>,
) -> Result<(Value, Option<Uploaded>), ApiError> {
    match id.kind {
        Kind::Cluster => Ok((with_kubeconfig_verdict(state, body, file)?, None)),
        Kind::Controller => compile_controller(state, id, body, file),
        Kind::App => {
            if let Some(chart) = file
                && wasmco_core::files::app_file_kind(chart) == AppFileKind::Chart
            {
                inspect_chart(state, id, chart)?;
            }
            Ok((body, None))
        }
        Kind::LogicalCloud => {
            let spec: wasmco_core::specs::LogicalCloudSpec = wasmco_core::read_spec(&body["spec"])
                .map_err(|e| ApiError::field(StatusCode::BAD_REQUEST, e.field, e.reason))?;
            let lc = wasmco_orchestrator::LogicalCloudRef {
                project: id.path[0].clone(),
                name: id.path[1].clone(),
            };
            state.orchestrator.check_cloud_edit(&lc, &spec)?;
            Ok((body, None))
        }
        Kind::ClusterDeployment => Ok((with_deploy_summary(body, file)?, None)),
        Kind::CaCert | Kind::ProjectCaCert => {
            if let Some(cert) = crate::ca_certs::cert_of(id.kind, &id.path) {
                state.orchestrator.check_ca_cert_edit(&cert)?;
            }
            Ok((body, None))
        }
        _ => Ok((body, None)),
    }
}

/// A cluster's body with the server's policy's verdict on its kubeconfig.
fn with_kubeconfig_verdict(
    state: &AppState,
    mut body: Value,
    file: Option<&[u8]>,
) -> Result<Value, ApiError> {
    let kubeconfig = file.unwrap_or_default();
    body["status"] = wasmco_pki::kubeconfig::cluster_status(&state.kubeconfigs, kubeconfig)
        .map_err(|e| {
            let field = match e.field.as_str() {
                "" => "file".to_owned(),
                inner => format!("file.{inner}"),
            };
            ApiError::field(StatusCode::BAD_REQUEST, field, e.reason)
        })?;
    Ok(body)
}

/// A cluster deployment's body with what its deploy file lays out (never
/// its logins), once the file passes Eggo's checks and wasmco's refusals.
fn with_deploy_summary(mut body: Value, file: Option<&[u8]>) -> Result<Value, ApiError> {
    let refused =
        |e: FieldError| ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, e.field, e.reason);
    let request = &body["spec"]["request"];
    if !request.is_null() {
        // Its file is made when its machines are picked.
        body["status"] = serde_json::json!({
            "masters": request["masterRequire"]["number"],
            "workers": request["workerRequire"]["number"],
        });
        return Ok(body);
    }
    let upload =
        wasmco_orchestrator::DeployUpload::from_bytes(file.unwrap_or_default()).map_err(refused)?;
    let (config, _) = upload.checked().map_err(refused)?;
    body["status"] = wasmco_orchestrator::DeployUpload::summary(&config);
    Ok(body)
}

/// A controller's component compiled and checked, and its body with the
/// component's digest, size, kind and effective limits.
fn compile_controller(
    state: &AppState,
    id: &ResourceId,
    mut body: Value,
    file: Option<&[u8]>,
) -> Result<(Value, Option<Uploaded>), ApiError> {
    let spec: ControllerSpec = wasmco_core::read_spec(&body["spec"])
        .map_err(|e| ApiError::field(StatusCode::BAD_REQUEST, e.field, e.reason))?;
    let wasm = file.ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            "file",
            "the controller has no component",
        )
    })?;
    let controller = state
        .runtime
        .load(&id.path[0], spec.kind, wasm, &spec.limits)
        .map_err(|e| {
            let field = if matches!(e, wasmco_runtime::RegistrationError::Limit { .. }) {
                "spec"
            } else {
                "file"
            };
            ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, field, e.to_string())
        })?;
    let (declared, declarations) = declared_intents(state, &id.path[0], wasm)?;
    let note = body["status"]["note"].take();
    body["status"] = json!({
        "digest": format!("sha256:{}", controller.digest()),
        "size": controller.size(),
        "type": controller.kind(),
        "priority": spec.priority,
        "limits": controller.limits(),
    });
    if let Some(declared) = declared {
        body["status"]["intents"] = declared;
    }
    if !note.is_null() {
        body["status"]["note"] = note;
    }
    Ok((
        body,
        Some(Uploaded {
            controller,
            _declarations: declarations,
        }),
    ))
}

/// An app's chart loaded by Helm's own code: one Helm could not install
/// is refused now, not at instantiate.
fn inspect_chart(state: &AppState, id: &ResourceId, chart: &[u8]) -> Result<(), ApiError> {
    let app = id.path.last().map(String::as_str).unwrap_or_default();
    let chart = wasmco_core::files::chart_for_app(chart, app)
        .map_err(|e| ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, e.field, e.reason))?;
    state.orchestrator.helm().inspect(&chart).map_err(|e| {
        let reason = match e {
            busy @ HelmError::Busy { .. } => {
                return ApiError::busy(busy.to_string());
            }
            HelmError::Chart { message, .. } => {
                format!("Helm cannot install this chart: {message}")
            }
            other => other.to_string(),
        };
        ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "file", reason)
    })?;
    Ok(())
}

/// A controller's upload, checked: its component, and while it declares
/// intent kinds, the lock its declaration was checked under, held until
/// it is stored.
pub(super) struct Uploaded {
    pub(super) controller: Controller,
    _declarations: Option<wasmco_orchestrator::DeclarationLock>,
}

/// The intent kinds `wasm` declares, checked: its section parses, its
/// schemas compile, and no other controller serves its segments; with the
/// lock the check was made under.
fn declared_intents(
    state: &AppState,
    controller: &str,
    wasm: &[u8],
) -> Result<(Option<Value>, Option<wasmco_orchestrator::DeclarationLock>), ApiError> {
    let refused =
        |e: FieldError| ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, e.field, e.reason);
    let Some(section) = wasmco_runtime::declared_intents(wasm)
        .map_err(|e| ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "file", e.to_string()))?
    else {
        return Ok((None, None));
    };
    let declaration = Declaration::parse(section).map_err(refused)?;
    let lock = state.orchestrator.lock_declarations()?;
    state
        .orchestrator
        .intent_catalog()?
        .check_new(controller, &declaration)
        .map_err(refused)?;
    // Compiling its schemas now refuses one the catalog could not load later.
    wasmco_orchestrator::intents::Declared::new(controller, declaration.clone())
        .map_err(refused)?;
    let declared = serde_json::to_value(declaration).map_err(ApiError::internal)?;
    Ok((Some(declared), Some(lock)))
}
