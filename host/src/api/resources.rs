//! Create, read, update and delete for every kind of the table, in steps:
//! read the body, check it, check its file, write it.

use axum::extract::{FromRequest, Multipart, Path, Query, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::AppState;
use crate::appcontext::DeployState;
use crate::db::{ResourceId, Write};
use crate::model::{
    self, BodyShape, ControllerSpec, Document, FieldError, FileKind, Kind, LabelBody, Reference,
};
use crate::runtime::Controller;

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
    let incoming = read_incoming(&state, kind, &parent, request, true).await?;
    let mut full = parent;
    full.extend(incoming.own.iter().cloned());
    let id = ResourceId::new(kind, full);
    let (body, controller) = prepare(&state, &id, incoming.body, incoming.file.as_deref()).await?;
    let write = Write {
        body: body.clone(),
        references: incoming.references,
        file: incoming.file,
    };
    let db = state.db.clone();
    blocking(move || db.create(&id, write)).await?;
    // Live only once stored: a refused write leaves the old version serving.
    if let Some(controller) = controller {
        state.controllers.insert(controller);
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
    let arity = kind.parent_arity();
    let incoming = read_incoming(&state, kind, &full[..arity], request, false).await?;
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
    // A missing resource is a 404 before any work on the body (a controller's
    // component would otherwise be compiled first).
    state.db.get_raw(&id)?;
    let file = match incoming.file {
        Some(file) => Some(file),
        None if kind == Kind::Controller => state.db.file(&id)?,
        None => None,
    };
    let (body, controller) = prepare(&state, &id, incoming.body, file.as_deref()).await?;
    let write = Write {
        body: body.clone(),
        references: incoming.references,
        file,
    };
    let db = state.db.clone();
    let changed = id.clone();
    blocking(move || db.update(&id, write)).await?;
    if kind == Kind::Cluster {
        state
            .orchestrator
            .cluster_changed(&changed.path[0], &changed.path[1]);
    }
    if let Some(controller) = controller {
        state.controllers.insert(controller);
    }
    Ok(axum::Json(body).into_response())
}

/// `GET` on an item: the stored JSON as is.
pub async fn get_one(state: AppState, kind: Kind, path: PathValues) -> Result<Response, ApiError> {
    let id = ResourceId::new(kind, values(path));
    Ok(json_response(state.db.get_raw(&id)?))
}

/// Query of a cluster list.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    label: Option<String>,
}

/// `GET` on a collection (`?label=` filters clusters): the stored bodies as a JSON array.
pub async fn list(
    state: AppState,
    kind: Kind,
    path: PathValues,
    query: Query<ListQuery>,
) -> Result<Response, ApiError> {
    let parent = values(path);
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
    let mut items = state.db.list_raw(kind, &parent)?;
    items.retain(|(id, _)| {
        let mut label_path = id.path.clone();
        label_path.push(label.clone());
        state
            .db
            .get_raw(&ResourceId::new(Kind::ClusterLabel, label_path))
            .is_ok()
    });
    let mut array = vec![b'['];
    for (i, (_, body)) in items.iter().enumerate() {
        if i > 0 {
            array.push(b',');
        }
        array.extend_from_slice(body);
    }
    array.push(b']');
    Ok(json_response(array))
}

fn json_response(body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body.into()).into_response()
}

/// `DELETE` on an item.
pub async fn delete(state: AppState, kind: Kind, path: PathValues) -> Result<Response, ApiError> {
    let id = ResourceId::new(kind, values(path));
    let dig = (kind == Kind::DeploymentIntentGroup)
        .then(|| crate::orchestrator::DigRef::from_path(&id.path));
    if let Some(dig) = &dig {
        let deployed = state.orchestrator.state(dig)?;
        if matches!(
            deployed.state,
            DeployState::Instantiated | DeployState::Updated
        ) {
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
    if kind == Kind::LogicalCloud {
        let lc = crate::orchestrator::LogicalCloudRef {
            project: id.path[0].clone(),
            name: id.path[1].clone(),
        };
        // Checked (and its context forgotten) before the resource goes: a
        // deployed logical cloud must be terminated first.
        state.orchestrator.release_logical_cloud(&lc)?;
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

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::db::DbError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::from)
}

fn name_field(kind: Kind) -> &'static str {
    match kind {
        Kind::ClusterLabel => "clusterLabel",
        _ => "metadata.name",
    }
}

/// Reads the request body the way `kind` carries it and checks everything
/// that does not need the database.
async fn read_incoming(
    state: &AppState,
    kind: Kind,
    parent: &[String],
    request: Request,
    creating: bool,
) -> Result<Incoming, ApiError> {
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
    match info.body {
        BodyShape::Label => {
            let bytes = json_bytes(request, info.max_body).await?;
            let label: LabelBody = model::parse_json(&bytes, "body")?;
            model::check_name("clusterLabel", &label.cluster_label)?;
            Ok(Incoming {
                own: vec![label.cluster_label.clone()],
                body: json!({ "clusterLabel": label.cluster_label }),
                references: Vec::new(),
                file: None,
            })
        }
        BodyShape::Document => {
            let bytes = json_bytes(request, info.max_body).await?;
            let document = model::parse_document(&bytes, "body")?;
            checked_document(kind, parent, document, None)
        }
        BodyShape::Multipart(file_kind) => {
            let (metadata, file) = read_multipart(state, request, info.max_body).await?;
            let metadata = metadata.ok_or_else(|| {
                ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "metadata",
                    "the multipart request needs a `metadata` part with the JSON document",
                )
            })?;
            let document = model::parse_document(&metadata, "metadata")?;
            if creating && file.is_none() {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "file",
                    "the multipart request needs a `file` part",
                ));
            }
            checked_document(kind, parent, document, file.map(|f| (file_kind, f)))
        }
    }
}

fn checked_document(
    kind: Kind,
    parent: &[String],
    document: Document,
    file: Option<(FileKind, Vec<u8>)>,
) -> Result<Incoming, ApiError> {
    model::check_name("metadata.name", &document.metadata.name)?;
    let references = model::check_spec(kind, parent, &document)?;
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
        FileKind::Kubeconfig => model::files::check_kubeconfig(bytes),
        FileKind::Manifests => model::files::parse_manifests(bytes).map(drop),
        FileKind::Profile => model::files::check_profile(bytes),
        // Compiled and checked against its world in `prepare`, which knows the kind.
        FileKind::Component => Ok(()),
    }
}

/// The body as stored: for a controller, its component is compiled and
/// checked now and its digest, size and effective limits are added.
async fn prepare(
    state: &AppState,
    id: &ResourceId,
    body: Value,
    file: Option<&[u8]>,
) -> Result<(Value, Option<Controller>), ApiError> {
    if id.kind != Kind::Controller {
        return Ok((body, None));
    }
    let spec: ControllerSpec = serde_json::from_value(body["spec"].clone())
        .map_err(|e| ApiError::field(StatusCode::BAD_REQUEST, "spec", e.to_string()))?;
    let wasm = file
        .ok_or_else(|| {
            ApiError::field(
                StatusCode::BAD_REQUEST,
                "file",
                "the controller has no component",
            )
        })?
        .to_vec();
    let name = id.path[0].clone();
    let runtime = state.runtime.clone();
    let limits = spec.limits.clone();
    let controller =
        tokio::task::spawn_blocking(move || runtime.load(&name, spec.kind, &wasm, &limits))
            .await
            .map_err(ApiError::internal)?
            .map_err(|e| {
                let field = if matches!(e, crate::runtime::RegistrationError::Limit { .. }) {
                    "spec"
                } else {
                    "file"
                };
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, field, e.to_string())
            })?;
    let mut body = body;
    body["status"] = json!({
        "digest": format!("sha256:{}", controller.digest()),
        "size": controller.size(),
        "type": controller.kind(),
        "priority": spec.priority,
        "limits": controller.limits(),
    });
    Ok((body, Some(controller)))
}

async fn json_bytes(request: Request, limit: usize) -> Result<bytes::Bytes, ApiError> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/json") {
        return Err(ApiError::field(
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
        ));
    }
    axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|_| ApiError::too_large(limit))
}

async fn read_multipart(
    state: &AppState,
    request: Request,
    limit: usize,
) -> Result<(Option<Vec<u8>>, Option<Vec<u8>>), ApiError> {
    let mut multipart = Multipart::from_request(request, state).await.map_err(|e| {
        ApiError::field(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type",
            format!("expected multipart/form-data: {}", e.body_text()),
        )
    })?;
    let mut metadata = None;
    let mut file = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err(multipart_error(e, limit)),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let bytes = field.bytes().await.map_err(|e| multipart_error(e, limit))?;
        match name.as_str() {
            "metadata" => metadata = Some(bytes.to_vec()),
            "file" => file = Some(bytes.to_vec()),
            other => {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    other,
                    format!("unexpected multipart part {other:?}; expected `metadata` and `file`"),
                ));
            }
        }
    }
    Ok((metadata, file))
}

fn multipart_error(error: axum::extract::multipart::MultipartError, limit: usize) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE || error.body_text().contains("length limit")
    {
        ApiError::too_large(limit)
    } else {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("malformed multipart body: {}", error.body_text()),
        )
    }
}
