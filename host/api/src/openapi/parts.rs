//! The pieces the paths are built of: path parameters, error answers and
//! a status's query.

use serde_json::{Value, json};

use super::wire;
use wasmco_core::wire::ErrorBody;

/// A route's path parameters, each a required string.
pub(super) fn parameters(route: &str) -> Vec<Value> {
    route
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect()
}

/// What a request may be refused with, by status.
pub(super) fn error_responses() -> Value {
    let error =
        json!({"content": {"application/json": {"schema": wire::reference::<ErrorBody>()}}});
    json!({
        "400": merge(&error, "invalid request; `field` names the part at fault"),
        "404": merge(&error, "the resource or its parent does not exist"),
        "409": merge(&error, "duplicate name, still referred to, or deployed (a logical cloud's level, namespace and user stay until it is terminated)"),
        "413": merge(&error, "request body too large"),
        "415": merge(&error, "wrong content type"),
        "422": merge(&error, "the body names something that does not exist, or its file is refused"),
    })
}

/// `base` with `description`.
pub(super) fn merge(base: &Value, description: &str) -> Value {
    let mut value = base.clone();
    value["description"] = json!(description);
    value
}

/// The query of a status (a DIG's, a logical cloud's, a cluster's
/// networks'), as EMCO takes it.
pub(super) fn status_query() -> Vec<Value> {
    let one_of = |values: &[&str]| json!({"type": "string", "enum": values});
    let list = json!({"type": "array", "items": {"type": "string"}});
    [
        (
            "status",
            one_of(&["deployed", "ready"]),
            "deployed (default) or ready",
        ),
        (
            "output",
            one_of(&["summary", "all", "detail"]),
            "summary, all (default) or detail",
        ),
        (
            "type",
            one_of(&["rsync", "cluster"]),
            "rsync (default) or cluster: the same answer, read from the clusters",
        ),
        (
            "apps",
            list.clone(),
            "only these apps (repeated or comma-separated)",
        ),
        ("app", list.clone(), "as apps"),
        (
            "clusters",
            list.clone(),
            "only these provider+cluster (repeated or comma-separated)",
        ),
        ("cluster", list.clone(), "as clusters"),
        (
            "resources",
            list.clone(),
            "only resources of these names (repeated or comma-separated)",
        ),
        ("resource", list, "as resources"),
    ]
    .into_iter()
    .map(|(name, schema, description)| {
        json!({"name": name, "in": "query", "required": false, "schema": schema,
               "explode": true, "description": description})
    })
    .collect()
}
