//! CRUD for the intent kinds controllers declare (see
//! `wasmco_core::intents`), at EMCO's paths under a deployment intent
//! group: `…/deployment-intent-groups/{dig}/<segment>/{name}[/<segment>/{name}…]`.

use std::collections::BTreeMap;

use axum::extract::{Path, Request};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use wasmco_core::Kind;
use wasmco_core::intents::{IntentBody, IntentKind};
use wasmco_orchestrator::intents::{Declared, stored_files};
use wasmco_store::db::{ResourceId, Write};

use super::error::ApiError;
use super::resources::{
    content_type, expect_json, json_array, json_response, parse_multipart_parts,
};
use super::state::AppState;
use super::work::blocking;

/// The route under a deployment intent group that serves them all.
pub const ROUTE_PARAM: &str = "intentPath";

/// Where a request lands: the declaring controller, the kinds along the
/// path, and the stored path (the group's four values, then the rest).
struct Target {
    declared: std::sync::Arc<Declared>,
    kinds: Vec<IntentKind>,
    path: Vec<String>,
    /// Whether the path ends at an item (else at a collection).
    item: bool,
}

impl Target {
    fn kind(&self) -> &IntentKind {
        // `resolve` refuses an empty path.
        &self.kinds[self.kinds.len() - 1]
    }

    fn item_id(&self) -> ResourceId {
        ResourceId::new(Kind::Intent, self.path.clone())
    }

    /// The resource the collection or item lives under.
    fn parent_id(&self) -> ResourceId {
        let own = if self.item { 2 } else { 1 };
        let parent = self.path[..self.path.len() - own].to_vec();
        if parent.len() == 4 {
            ResourceId::new(Kind::DeploymentIntentGroup, parent)
        } else {
            ResourceId::new(Kind::Intent, parent)
        }
    }
}

/// Serves every request under a group that wasmco's own routes do not.
pub async fn handle(
    state: AppState,
    Path(params): Path<BTreeMap<String, String>>,
    request: Request,
) -> Result<Response, ApiError> {
    let method = request.method().clone();
    let uri = request.uri().clone();
    let group = [
        Kind::Project.info().param,
        Kind::CompositeApp.info().param,
        "compositeAppVersion",
        Kind::DeploymentIntentGroup.info().param,
    ]
    .map(|param| params.get(param).cloned().unwrap_or_default());
    let rest = params.get(ROUTE_PARAM).cloned().unwrap_or_default();
    let catalog = state.orchestrator.intent_catalog()?;
    let target =
        resolve(&catalog, &group, &rest).ok_or_else(|| ApiError::no_route(&method, uri.path()))?;
    match (target.item, method.clone()) {
        (false, Method::GET) => list(&state, &target).await,
        (false, Method::POST) => write(state, target, request, true).await,
        (true, Method::GET) => Ok(json_response(state.db.get_json(&target.item_id())?)),
        (true, Method::PUT) => write(state, target, request, false).await,
        (true, Method::DELETE) => {
            let db = state.db.clone();
            let id = target.item_id();
            blocking(move || db.delete(&id)).await?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        _ => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not allowed on {}", uri.path()),
        )),
    }
}

fn resolve(
    catalog: &wasmco_orchestrator::intents::Catalog,
    group: &[String; 4],
    rest: &str,
) -> Option<Target> {
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let declared = catalog.serving(parts.first()?)?.clone();
    let segments: Vec<&str> = parts.iter().step_by(2).copied().collect();
    let kinds: Vec<IntentKind> = declared
        .kinds_along(&segments)?
        .into_iter()
        .cloned()
        .collect();
    let mut path = group.to_vec();
    path.extend(parts.iter().map(|p| (*p).to_owned()));
    Some(Target {
        declared,
        kinds,
        item: parts.len().is_multiple_of(2),
        path,
    })
}

async fn list(state: &AppState, target: &Target) -> Result<Response, ApiError> {
    let db = state.db.clone();
    let parent = target.parent_id();
    let segment = target.kind().segment.clone();
    let items = blocking(move || db.list_intents(&parent, &segment)).await?;
    let raw: Vec<(ResourceId, Vec<u8>)> = items
        .into_iter()
        .map(|(id, body)| (id, body.to_string().into_bytes()))
        .collect();
    Ok(json_response(json_array(&raw)))
}

/// A file an intent carries: its name (empty for a single `file`) and bytes.
type IntentFile = (String, Vec<u8>);

async fn write(
    state: AppState,
    target: Target,
    request: Request,
    creating: bool,
) -> Result<Response, ApiError> {
    let kind = target.kind().clone();
    let (metadata, files) = read_upload(&kind, request).await?;
    let document = wasmco_core::parse_document(&metadata, "metadata")?;
    wasmco_core::check_name("metadata.name", &document.metadata.name)?;
    target
        .declared
        .validate(&kind, &document.spec)
        .map_err(|e| ApiError::field(StatusCode::BAD_REQUEST, e.field, e.reason))?;
    let path = item_path(&target, &document.metadata.name, creating)?;
    let mut body = serde_json::to_value(&document).map_err(ApiError::internal)?;
    if kind.body == IntentBody::Files {
        body["files"] = files.iter().map(|(name, _)| json!(name)).collect();
    }
    // An update without files keeps the ones stored.
    let file = if files.is_empty() && !creating {
        None
    } else {
        stored_files(kind.body, files)
    };
    let id = ResourceId::new(Kind::Intent, path);
    let write = Write {
        body: body.clone(),
        references: Vec::new(),
        file,
    };
    let db = state.db.clone();
    if creating {
        blocking(move || db.create(&id, write)).await?;
        Ok((StatusCode::CREATED, axum::Json(body)).into_response())
    } else {
        blocking(move || db.update(&id, write)).await?;
        Ok(axum::Json(body).into_response())
    }
}

/// The request's JSON document and files, as the kind's body carries them.
async fn read_upload(
    kind: &IntentKind,
    request: Request,
) -> Result<(Vec<u8>, Vec<IntentFile>), ApiError> {
    let content_type = content_type(&request);
    let limit = Kind::Intent.info().max_body;
    let bytes = axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|_| ApiError::too_large(limit))?;
    if kind.body == IntentBody::Json {
        expect_json(&content_type)?;
        return Ok((bytes.to_vec(), Vec::new()));
    }
    let boundary = multer::parse_boundary(&content_type).map_err(|_| {
        ApiError::field(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type",
            format!(
                "a {} is uploaded as multipart/form-data, with a `metadata` part (the \
                 JSON document) and {}",
                kind.name,
                if kind.body == IntentBody::File {
                    "a `file` part"
                } else {
                    "`files` parts"
                }
            ),
        )
    })?;
    let parts = parse_multipart_parts(bytes, boundary, kind.body == IntentBody::Files)?;
    let metadata = parts.metadata.ok_or_else(|| {
        ApiError::field(
            StatusCode::BAD_REQUEST,
            "metadata",
            "the multipart request needs a `metadata` part with the JSON document",
        )
    })?;
    // The file is optional, as in EMCO: gac's resource that patches an
    // existing object has none.
    let files = match (kind.body, parts.file) {
        (IntentBody::File, Some(file)) => vec![(String::new(), file)],
        _ => parts.files,
    };
    Ok((metadata, files))
}

/// The stored path of the item written: the collection's and the new name
/// when creating, the item's own (which the body must name) when updating.
fn item_path(target: &Target, name: &str, creating: bool) -> Result<Vec<String>, ApiError> {
    let mut path = target.path.clone();
    if creating {
        path.push(name.to_owned());
    } else if path.last().map(String::as_str) != Some(name) {
        return Err(ApiError::field(
            StatusCode::BAD_REQUEST,
            "metadata.name",
            format!(
                "the body names {name} but the path names {}; a resource cannot be renamed",
                path.last().map_or("", String::as_str)
            ),
        ));
    }
    Ok(path)
}
