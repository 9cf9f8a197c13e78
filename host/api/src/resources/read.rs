//! `GET` on an item or a collection.

use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use wasmco_core::Kind;
use wasmco_store::db::ResourceId;

use super::path::{PathValues, values};
use crate::auth::Principal;
use crate::error::ApiError;
use crate::state::AppState;

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
