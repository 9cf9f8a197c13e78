//! What the API server checks of an incoming object before it is stored:
//! its type, its name and its namespace against the request's.

use serde_json::{Value, json};

use super::error::KubeError;
use crate::catalog::ResourceType;

/// Checks an incoming object against its type and the request path.
pub(super) fn admit(
    ty: &ResourceType,
    namespace: &str,
    name: Option<&str>,
    body: &mut Value,
) -> Result<String, KubeError> {
    let Some(object) = body.as_object_mut() else {
        return Err(KubeError::bad_request("the body is not a JSON object"));
    };
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if api_version != ty.api_version() || kind != ty.kind {
        return Err(KubeError::bad_request(format!(
            "the API version in the data ({api_version}) or kind ({kind}) does not match the expected API version ({}) and kind ({})",
            ty.api_version(),
            ty.kind
        )));
    }
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return Err(KubeError::bad_request("metadata must be an object"));
    };
    let object_name = metadata
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let object_name = match (object_name, name) {
        (Some(given), Some(path)) if given != path => {
            return Err(KubeError::bad_request(format!(
                "the name of the object ({given}) does not match the name on the URL ({path})"
            )));
        }
        (Some(given), _) => given,
        (None, Some(path)) => path.to_owned(),
        (None, None) => {
            return Err(KubeError::invalid(
                ty,
                "",
                "metadata.name: Required value: name or generateName is required",
            ));
        }
    };
    if !is_dns_subdomain(&object_name) {
        return Err(KubeError::invalid(
            ty,
            &object_name,
            "metadata.name: Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        ));
    }
    if ty.namespaced {
        match metadata.get("namespace").and_then(Value::as_str) {
            Some(given) if given != namespace => {
                return Err(KubeError::bad_request(format!(
                    "the namespace of the provided object ({given}) does not match the namespace sent on the request ({namespace})"
                )));
            }
            _ => {
                metadata.insert("namespace".into(), json!(namespace));
            }
        }
    } else {
        metadata.remove("namespace");
    }
    metadata.insert("name".into(), json!(object_name));
    Ok(object_name)
}

/// Kubernetes' rule for most object names: an RFC 1123 subdomain, at most
/// 253 lowercase letters, digits, `-` and `.`, starting and ending with a
/// letter or digit.
fn is_dns_subdomain(name: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.iter().all(|&c| alnum(c) || c == b'-' || c == b'.')
        && bytes.first().is_some_and(|&c| alnum(c))
        && bytes.last().is_some_and(|&c| alnum(c))
}
