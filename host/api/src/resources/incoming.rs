//! A create or update request's body parsed and checked: everything that
//! does not need the database.

use axum::http::StatusCode;
use serde_json::{Value, json};

use wasmco_core::files::AppFileKind;
use wasmco_core::{BodyShape, Document, FieldError, FileKind, Kind, LabelBody, Reference};

use super::multipart::{Parts, parse_multipart};
use super::request::RawBody;
use crate::error::ApiError;

/// A create or update request, read and checked.
pub(super) struct Incoming {
    /// The resource's own path values (name, and version for composite apps).
    pub(super) own: Vec<String>,
    pub(super) body: Value,
    pub(super) references: Vec<Reference>,
    pub(super) file: Option<Vec<u8>>,
}

/// Parses and checks a body (everything that does not need the database);
/// runs on the work pool.
pub(super) fn parse_incoming(
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
            let Parts {
                metadata,
                file,
                private_key,
                ..
            } = parse_multipart(raw.bytes, boundary)?;
            let metadata = metadata.ok_or_else(|| {
                ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "metadata",
                    "the multipart request needs a `metadata` part with the JSON document",
                )
            })?;
            let document = wasmco_core::parse_document(&metadata, "metadata")?;
            let requested = requested(file_kind, &document, file.is_some())?;
            if creating && file.is_none() && !requested {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    "file",
                    "the multipart request needs a `file` part",
                ));
            }
            let file = match file_kind {
                FileKind::DeployFile => deploy_upload(file, private_key)?,
                _ if private_key.is_some() => {
                    return Err(ApiError::field(
                        StatusCode::BAD_REQUEST,
                        "privateKey",
                        "only a cluster deployment takes a `privateKey` part",
                    ));
                }
                _ => file,
            };
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

/// Whether `document` is a cluster deployment made from `spec.request`,
/// which has no file; refused when it has one all the same.
fn requested(file_kind: FileKind, document: &Document, has_file: bool) -> Result<bool, ApiError> {
    let requested = file_kind == FileKind::DeployFile
        && document.spec.get("request").is_some_and(|r| !r.is_null());
    if requested && has_file {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "file",
            "a cluster deployment is made from a deploy file or from spec.request (its \
             machines picked from the provider's), not both",
        ));
    }
    Ok(requested)
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
        // Checked in `prepare`, with wasmco's refusals and the server's files.
        FileKind::DeployFile => Ok(()),
        FileKind::MachineLogin => {
            wasmco_core::eggo::eggops::MachineLogin::from_secret(bytes).map(drop)
        }
    }
}

/// A cluster deployment's deploy file and key, as the one sealed file it
/// is stored as.
fn deploy_upload(
    file: Option<Vec<u8>>,
    private_key: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>, ApiError> {
    let text = |part: &str, bytes: Vec<u8>| {
        String::from_utf8(bytes)
            .map_err(|_| ApiError::field(StatusCode::BAD_REQUEST, part, "must be UTF-8 text"))
    };
    let Some(file) = file else {
        if private_key.is_some() {
            return Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                "file",
                "a `privateKey` part comes with the deploy file it logs in for",
            ));
        }
        return Ok(None);
    };
    let upload = wasmco_orchestrator::DeployUpload {
        deploy_file: text("file", file)?,
        private_key: private_key.map(|key| text("privateKey", key)).transpose()?,
    };
    Ok(Some(upload.to_bytes()))
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
