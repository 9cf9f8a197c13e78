//! Create, read, update and delete for every kind of the table, in steps:
//! read the body, check it, check its file, write it.

use axum::extract::{Path, Query, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use wasmco_core::files::AppFileKind;
use wasmco_core::intents::Declaration;
use wasmco_core::{
    BodyShape, ControllerSpec, Document, FieldError, FileKind, Kind, LabelBody, Reference,
};
use wasmco_runtime::Controller;
use wasmco_runtime::helm::HelmError;
use wasmco_store::db::{ResourceId, Write};

use super::auth::Principal;
use super::error::ApiError;
use super::state::AppState;

/// Path parameters in route order.
pub type PathValues = Path<Vec<(String, String)>>;

fn values(path: PathValues) -> Vec<String> {
    path.0.into_iter().map(|(_, v)| v).collect()
}

/// A create or update request, read and checked.
struct Incoming {
    /// The resource's own path values (name, and version for composite apps).
    own: Vec<String>,
    body: Value,
    references: Vec<Reference>,
    file: Option<Vec<u8>>,
}

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
    let db = state.db.clone();
    let created = id.clone();
    blocking(move || db.create(&id, write)).await?;
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
            let file = match incoming.file {
                Some(file) => Some(file),
                // Kept, and checked again: the policy may have changed since.
                None if matches!(kind, Kind::Controller | Kind::Cluster) => worker.db.file(&id)?,
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
    let db = state.db.clone();
    let changed = id.clone();
    blocking(move || db.update(&id, write)).await?;
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

/// Query of an item.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemQuery {
    /// One key of a key-value pair resource.
    key: Option<String>,
}

/// `GET` on an item: the stored JSON as is; for key-value pairs with
/// `?key=`, as EMCO answers it, `{"value": …}` of that key.
pub async fn get_one(
    state: AppState,
    kind: Kind,
    path: PathValues,
    query: Query<ItemQuery>,
) -> Result<Response, ApiError> {
    let id = ResourceId::new(kind, values(path));
    let Some(key) = &query.key else {
        return Ok(json_response(state.db.get_json(&id)?));
    };
    if !kind.is_kv_pairs() {
        return Err(ApiError::field(
            StatusCode::BAD_REQUEST,
            "key",
            "only key-value pairs (a cluster's, a logical cloud's) are read by key",
        ));
    }
    let body = state.db.get(&id)?;
    let value = body["spec"]["kv"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|pair| pair.get(key.as_str()))
        .ok_or_else(|| {
            ApiError::field(
                StatusCode::NOT_FOUND,
                "key",
                format!("{} has no key {key:?}", id.describe()),
            )
        })?;
    Ok(axum::Json(json!({ "value": value })).into_response())
}

/// Query of a cluster list.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    label: Option<String>,
    /// The app whose profile to answer (a composite profile's profiles).
    app: Option<String>,
}

/// `GET` on a collection: the stored bodies as a JSON array; with
/// `?label=` (clusters only), as EMCO answers it, the names of the
/// clusters carrying that label.
pub async fn list(
    state: AppState,
    principal: &Principal,
    kind: Kind,
    path: PathValues,
    query: Query<ListQuery>,
) -> Result<Response, ApiError> {
    let parent = values(path);
    if kind == Kind::Project && matches!(principal, Principal::Scoped(_)) {
        // A scoped token sees its own projects, not the others' names.
        let mut items = state.db.list_raw(kind, &parent)?;
        items.retain(|(id, _)| principal.sees(&id.path[0]));
        return Ok(json_response(json_array(&items)));
    }
    if let Some(app) = &query.app {
        return profile_of_app(&state, kind, &parent, app);
    }
    let label = match (&query.label, kind) {
        (None, _) => return Ok(json_response(state.db.list_json(kind, &parent)?)),
        (Some(label), Kind::Cluster) => label,
        (Some(_), _) => {
            return Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                "label",
                "only clusters can be filtered by label",
            ));
        }
    };
    let mut names = Vec::new();
    for (id, _) in state.db.list_raw(kind, &parent)? {
        let mut label_path = id.path.clone();
        label_path.push(label.clone());
        if state
            .db
            .get_raw(&ResourceId::new(Kind::ClusterLabel, label_path))
            .is_ok()
            && let Some(name) = id.path.last()
        {
            names.push(name.clone());
        }
    }
    Ok(axum::Json(names).into_response())
}

/// `GET …/profiles?app=web`, as EMCO answers it: the one profile of that app.
fn profile_of_app(
    state: &AppState,
    kind: Kind,
    parent: &[String],
    app: &str,
) -> Result<Response, ApiError> {
    if kind != Kind::AppProfile {
        return Err(ApiError::field(
            StatusCode::BAD_REQUEST,
            "app",
            "only a composite profile's profiles are found by app",
        ));
    }
    let (_, body) = state
        .db
        .list(kind, parent)?
        .into_iter()
        .find(|(_, body)| body["spec"]["app"] == app)
        .ok_or_else(|| {
            ApiError::field(
                StatusCode::NOT_FOUND,
                "app",
                format!("no profile in this composite profile is for app {app:?}"),
            )
        })?;
    Ok(axum::Json(body).into_response())
}

/// Stored bodies (JSON text) as one JSON array.
pub(crate) fn json_array(items: &[(ResourceId, Vec<u8>)]) -> Vec<u8> {
    let mut array = vec![b'['];
    for (i, (_, body)) in items.iter().enumerate() {
        if i > 0 {
            array.push(b',');
        }
        array.extend_from_slice(body);
    }
    array.push(b']');
    array
}

pub(crate) fn json_response(body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body.into()).into_response()
}

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
        state.orchestrator.cluster_changed(&id.path[0], &id.path[1]);
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, wasmco_store::db::DbError> + Send + 'static,
) -> Result<T, ApiError> {
    crate::work::off_the_workers(work)
        .await?
        .map_err(ApiError::from)
}

fn name_field(kind: Kind) -> &'static str {
    match kind {
        Kind::ClusterLabel => "clusterLabel",
        _ => "metadata.name",
    }
}

/// A request's body, read whole within the kind's limit; nothing of it is
/// parsed yet.
struct RawBody {
    /// The multipart boundary, for a kind that takes multipart.
    boundary: Option<String>,
    bytes: bytes::Bytes,
}

/// Reads the request body the way `kind` carries it: the size and the
/// content type are checked here, the content in [`parse_incoming`].
async fn read_body(kind: Kind, request: Request) -> Result<RawBody, ApiError> {
    let info = kind.info();
    if let Some(length) = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && length > info.max_body
    {
        return Err(ApiError::too_large(info.max_body));
    }
    let content_type = content_type(&request);
    let boundary = match info.body {
        BodyShape::Label | BodyShape::Document => {
            expect_json(&content_type)?;
            None
        }
        // EMCO's own controllers are registered by host and port, as JSON.
        BodyShape::Multipart(FileKind::Component)
            if content_type.starts_with("application/json") =>
        {
            None
        }
        BodyShape::Multipart(file_kind) => {
            Some(multer::parse_boundary(&content_type).map_err(|e| {
                let file = match file_kind {
                    FileKind::Component => "the WebAssembly component (.wasm): controllers are components, not services",
                    FileKind::Manifests => "the app: a Helm chart .tgz, a .tgz of manifests or a multi-document YAML",
                    FileKind::Profile => "the profile: EMCO's .tgz or a YAML map",
                    FileKind::Kubeconfig => "the cluster's kubeconfig",
                };
                let got = if content_type.starts_with("multipart/") {
                    format!("the multipart body is unreadable ({e})")
                } else if content_type.is_empty() {
                    "the request has no Content-Type".to_owned()
                } else {
                    format!("got {content_type}")
                };
                ApiError::field(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Content-Type",
                    format!(
                        "this is uploaded as multipart/form-data, with a `metadata` part (the JSON \
                         document) and a `file` part ({file}); {got}"
                    ),
                )
            })?)
        }
    };
    let bytes = axum::body::to_bytes(request.into_body(), info.max_body)
        .await
        .map_err(|_| ApiError::too_large(info.max_body))?;
    Ok(RawBody { boundary, bytes })
}

/// Parses and checks a body (everything that does not need the database);
/// runs on the work pool.
fn parse_incoming(
    kind: Kind,
    parent: &[String],
    raw: RawBody,
    creating: bool,
) -> Result<Incoming, ApiError> {
    match (kind.info().body, raw.boundary) {
        (BodyShape::Label, _) => {
            let label: LabelBody = wasmco_core::parse_json(&raw.bytes, "body")?;
            wasmco_core::check_name("clusterLabel", &label.cluster_label)?;
            Ok(Incoming {
                own: vec![label.cluster_label.clone()],
                body: json!({ "clusterLabel": label.cluster_label }),
                references: Vec::new(),
                file: None,
            })
        }
        (BodyShape::Multipart(file_kind), Some(boundary)) => {
            let Parts { metadata, file, .. } = parse_multipart(raw.bytes, boundary)?;
            let metadata = metadata.ok_or_else(|| {
                ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "metadata",
                    "the multipart request needs a `metadata` part with the JSON document",
                )
            })?;
            let document = wasmco_core::parse_document(&metadata, "metadata")?;
            if creating && file.is_none() {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "file",
                    "the multipart request needs a `file` part",
                ));
            }
            checked_document(kind, parent, document, file.map(|f| (file_kind, f)))
        }
        (BodyShape::Multipart(FileKind::Component), None) => {
            let value: Value = serde_json::from_slice(&raw.bytes).unwrap_or_default();
            if value["spec"].get("host").is_none() && value["spec"].get("port").is_none() {
                return Err(ApiError::field(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Content-Type",
                    "a controller is uploaded as multipart/form-data, with a `metadata` part (the JSON \
                     document) and a `file` part (the WebAssembly component); a JSON body registers one \
                     of EMCO's controllers that wasmco ships, by EMCO's host and port",
                ));
            }
            let mut document = wasmco_core::parse_document(&raw.bytes, "body")?;
            let (wasm, note) = bind_builtin(&document.metadata.name, &mut document.spec)?;
            let mut incoming =
                checked_document(kind, parent, document, Some((FileKind::Component, wasm)))?;
            incoming.body["status"] = json!({ "note": note });
            Ok(incoming)
        }
        _ => {
            let document = wasmco_core::parse_document(&raw.bytes, "body")?;
            checked_document(kind, parent, document, None)
        }
    }
}

fn checked_document(
    kind: Kind,
    parent: &[String],
    document: Document,
    file: Option<(FileKind, Vec<u8>)>,
) -> Result<Incoming, ApiError> {
    wasmco_core::check_name("metadata.name", &document.metadata.name)?;
    let mut document = document;
    if kind == Kind::LogicalCloud
        && let Some(project) = parent.first()
    {
        wasmco_core::specs::fill_default_user(project, &document.metadata.name, &mut document.spec);
    }
    let references = wasmco_core::check_spec(kind, parent, &document)?;
    let mut own = vec![document.metadata.name.clone()];
    if kind.is_versioned() {
        let version = document.spec["compositeAppVersion"]
            .as_str()
            .unwrap_or_default();
        own.push(version.to_owned());
    }
    let file = match file {
        Some((file_kind, bytes)) => {
            check_file(file_kind, &bytes)?;
            Some(bytes)
        }
        None => None,
    };
    let body = serde_json::to_value(&document).map_err(ApiError::internal)?;
    Ok(Incoming {
        own,
        body,
        references,
        file,
    })
}

fn check_file(kind: FileKind, bytes: &[u8]) -> Result<(), FieldError> {
    match kind {
        // Checked in `prepare`, against the server's kubeconfig policy.
        FileKind::Kubeconfig => Ok(()),
        // A chart is loaded by Helm's own code in `prepare`.
        FileKind::Manifests => match wasmco_core::files::app_file_kind(bytes) {
            AppFileKind::Chart => wasmco_core::files::check_chart_archive(bytes),
            AppFileKind::Manifests => wasmco_core::files::parse_manifests(bytes).map(drop),
        },
        FileKind::Profile => wasmco_core::files::check_profile(bytes),
        // Compiled and checked against its world in `prepare`, which knows the kind.
        FileKind::Component => Ok(()),
    }
}

/// The body as stored: a cluster's kubeconfig is checked against the
/// server's policy and its verdict added; a controller's component is
/// compiled and checked now and its digest, size and effective limits are
/// added. Runs on the work pool.
fn prepare(
    state: &AppState,
    id: &ResourceId,
    body: Value,
    file: Option<&[u8]>,
) -> Result<(Value, Option<Uploaded>), ApiError> {
    let mut body = body;
    match id.kind {
        Kind::Cluster => {
            let kubeconfig = file.unwrap_or_default();
            body["status"] = wasmco_pki::kubeconfig::cluster_status(&state.kubeconfigs, kubeconfig)
                .map_err(|e| {
                    let field = match e.field.as_str() {
                        "" => "file".to_owned(),
                        inner => format!("file.{inner}"),
                    };
                    ApiError::field(StatusCode::BAD_REQUEST, field, e.reason)
                })?;
            Ok((body, None))
        }
        Kind::Controller => {
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
        Kind::App => {
            if let Some(chart) = file
                && wasmco_core::files::app_file_kind(chart) == AppFileKind::Chart
            {
                let app = id.path.last().map(String::as_str).unwrap_or_default();
                let chart = wasmco_core::files::chart_for_app(chart, app).map_err(|e| {
                    ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, e.field, e.reason)
                })?;
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
        Kind::CaCert | Kind::ProjectCaCert => {
            if let Some(cert) = crate::ca_certs::cert_of(id.kind, &id.path) {
                state.orchestrator.check_ca_cert_edit(&cert)?;
            }
            Ok((body, None))
        }
        _ => Ok((body, None)),
    }
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

/// A controller's upload, checked: its component, and while it declares
/// intent kinds, the lock its declaration was checked under, held until
/// it is stored.
struct Uploaded {
    controller: Controller,
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

/// A controller registered as EMCO registers its services, by host and
/// port, names one of EMCO's own controllers that wasmco ships as a
/// component: that component is registered, with a note saying so.
fn bind_builtin(name: &str, spec: &mut Value) -> Result<(Vec<u8>, String), ApiError> {
    let builtin = wasmco_runtime::builtin::for_emco_name(name).ok_or_else(|| {
        let shipped: Vec<&str> = wasmco_runtime::builtin::BUILTINS
            .iter()
            .filter_map(|b| b.emco)
            .collect();
        ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "metadata.name",
            format!(
                "a controller given by host and port is an EMCO gRPC service, and wasmco ships \
                 no component for {name:?} (it ships EMCO's {}); upload the controller's \
                 WebAssembly component as `file` instead",
                shipped.join(", ")
            ),
        )
    })?;
    let note = format!(
        "EMCO's {} runs here as wasmco's built-in component {}; host and port are not used",
        builtin.emco.unwrap_or(builtin.name),
        builtin.name
    );
    if let Some(spec) = spec.as_object_mut() {
        spec.remove("host");
        spec.remove("port");
        spec.entry("type").or_insert(json!(builtin.kind));
    }
    Ok((builtin.wasm.to_vec(), note))
}

/// The request's `Content-Type`, empty when it has none.
pub(crate) fn content_type(request: &Request) -> String {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

pub(crate) fn expect_json(content_type: &str) -> Result<(), ApiError> {
    if content_type.starts_with("application/json") {
        return Ok(());
    }
    Err(ApiError::field(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "Content-Type",
        format!(
            "expected application/json, got {:?}",
            if content_type.is_empty() {
                "nothing"
            } else {
                content_type
            }
        ),
    ))
}

/// The parts of a multipart body that wasmco reads.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub metadata: Option<Vec<u8>>,
    pub file: Option<Vec<u8>>,
    /// `files` parts (EMCO's several-file uploads), by file name, in order.
    pub files: Vec<(String, Vec<u8>)>,
}

/// The `metadata` and `file` parts of a multipart body already read whole.
fn parse_multipart(bytes: bytes::Bytes, boundary: String) -> Result<Parts, ApiError> {
    parse_multipart_parts(bytes, boundary, false)
}

/// [`parse_multipart`], taking any number of `files` parts when `many`.
pub(crate) fn parse_multipart_parts(
    bytes: bytes::Bytes,
    boundary: String,
    many: bool,
) -> Result<Parts, ApiError> {
    let body = futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(bytes) });
    let mut multipart = multer::Multipart::new(body, boundary);
    let malformed = |e: multer::Error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("malformed multipart body: {e}"),
        )
    };
    // The whole body is in memory, so this future never waits: polled
    // once, it finishes here, on this (work pool) thread.
    let parsed = async {
        let mut parts = Parts::default();
        while let Some(field) = multipart.next_field().await.map_err(malformed)? {
            let name = field.name().unwrap_or_default().to_owned();
            let file_name = field.file_name().unwrap_or_default().to_owned();
            let part = field.bytes().await.map_err(malformed)?.to_vec();
            if many && name == "files" {
                parts.files.push((file_name, part));
                continue;
            }
            let slot = match name.as_str() {
                "metadata" => &mut parts.metadata,
                "file" => &mut parts.file,
                other => {
                    return Err(ApiError::field(
                        StatusCode::BAD_REQUEST,
                        other,
                        format!(
                            "unexpected multipart part {other:?}; expected `metadata` and `file`"
                        ),
                    ));
                }
            };
            if slot.replace(part).is_some() {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    name,
                    "the part appears twice",
                ));
            }
        }
        Ok(parts)
    };
    futures_util::FutureExt::now_or_never(parsed).unwrap_or_else(|| {
        Err(ApiError::internal(
            "a multipart body held in memory waited for more input",
        ))
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn body(boundary: &str, parts: &[(&str, &[u8])]) -> bytes::Bytes {
        let mut out = Vec::new();
        for (name, content) in parts {
            out.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                    .as_bytes(),
            );
            out.extend_from_slice(content);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        out.into()
    }

    #[test]
    fn multipart_parts_are_read_and_repeats_refused() {
        let Parts { metadata, file, .. } = parse_multipart(
            body("b", &[("metadata", b"{}"), ("file", b"x\r\ny")]),
            "b".into(),
        )
        .unwrap();
        assert_eq!(metadata.as_deref(), Some(&b"{}"[..]));
        assert_eq!(file.as_deref(), Some(&b"x\r\ny"[..]));
        let twice = parse_multipart(body("b", &[("file", b"1"), ("file", b"2")]), "b".into());
        assert_eq!(twice.unwrap_err().field.as_deref(), Some("file"));
        let other = parse_multipart(body("b", &[("extra", b"1")]), "b".into());
        assert_eq!(other.unwrap_err().status, StatusCode::BAD_REQUEST);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any body under any boundary: parts or a 400, never a panic or a wait.
        #[test]
        fn any_multipart_body_is_parsed_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2048), boundary in "[a-zA-Z0-9'()+_,./:=? -]{1,70}") {
            if let Err(error) = parse_multipart(bytes.into(), boundary) {
                prop_assert!(error.status.is_client_error(), "{}", error.message);
            }
        }

        /// What was put in comes out, whatever its bytes.
        #[test]
        fn parts_round_trip(file in proptest::collection::vec(any::<u8>(), 0..512)) {
            let boundary = "wasmco-boundary-7f3a";
            prop_assume!(!file.windows(boundary.len()).any(|w| w == boundary.as_bytes()));
            let parts = parse_multipart(body(boundary, &[("file", &file)]), boundary.into()).unwrap();
            prop_assert_eq!(parts.file, Some(file));
        }
    }
}
