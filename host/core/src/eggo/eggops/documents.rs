//! Eggops' YAML as its users apply it: each document read into what wasmco
//! keeps of it. Machines, Infrastructures and Clusters (`eggo.isula.org/v1`)
//! and the `Secret` a Cluster's machines log in with; the Namespace and the
//! volume and claim Eggops mounts its packages from mean nothing to wasmco
//! (its packages are on its host), and are said to be skipped.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

use super::machines::MachineSpec;
use super::request::{ClusterRequestSpec, InfrastructureSpec};
use crate::FieldError;

/// The group and version of Eggops' kinds.
pub const API_VERSION: &str = "eggo.isula.org/v1";

/// One of Eggops' documents.
#[derive(Debug, Clone, PartialEq)]
pub enum EggopsDocument {
    /// A machine registered.
    Machine(String, MachineSpec),
    /// What clusters' machines are installed with.
    Infrastructure(String, InfrastructureSpec),
    /// A cluster requested.
    Cluster(String, Box<ClusterRequestSpec>),
    /// A login for machines (a `kubernetes.io/basic-auth` or
    /// `kubernetes.io/ssh-auth` Secret).
    Login(String, MachineLogin),
    /// A document Eggops needs and wasmco does not: its kind, name and why.
    Skipped(String, String, &'static str),
}

/// How machines are logged in to.
#[derive(Clone, PartialEq, Eq)]
pub struct MachineLogin {
    /// The user (root when a key's Secret names none).
    pub username: String,
    /// The password, for basic-auth.
    pub password: Option<String>,
    /// The private key (PEM), for ssh-auth.
    pub private_key: Option<String>,
}

impl std::fmt::Debug for MachineLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineLogin")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field(
                "private_key",
                &self.private_key.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl MachineLogin {
    /// A login Secret as uploaded (YAML or JSON).
    pub fn from_secret(bytes: &[u8]) -> Result<MachineLogin, FieldError> {
        let text =
            std::str::from_utf8(bytes).map_err(|_| FieldError::new("file", "is not UTF-8 text"))?;
        let value: Value = serde_norway::from_str(text)
            .map_err(|e| FieldError::new("file", format!("is not a YAML or JSON Secret: {e}")))?;
        if value["kind"].as_str() != Some("Secret") {
            return Err(FieldError::new(
                "file.kind",
                "must be Secret (a kubernetes.io/basic-auth or kubernetes.io/ssh-auth one)",
            ));
        }
        login(&value).map_err(|e| FieldError::new(format!("file.{}", e.field), e.reason))
    }
}

/// `value` read as an Eggops document; `None` when it is none (another
/// API's document).
pub fn document(value: &Value) -> Result<Option<EggopsDocument>, FieldError> {
    let text = |field: &str| value[field].as_str().unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let name = value["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let eggops = api_version == API_VERSION;
    if eggops || (api_version == "v1" && kind == "Secret") {
        crate::check_name("metadata.name", &name)?;
    }
    let spec = &value["spec"];
    Ok(Some(match (api_version, kind) {
        (API_VERSION, "Machine") => {
            let mut machine: MachineSpec = crate::document::from_value(spec, "spec")?;
            machine.labels = labels(&value["metadata"]["labels"])?;
            machine.check()?;
            EggopsDocument::Machine(name, machine)
        }
        (API_VERSION, "Infrastructure") => {
            EggopsDocument::Infrastructure(name, crate::document::from_value(spec, "spec")?)
        }
        (API_VERSION, "Cluster") => {
            let request: ClusterRequestSpec = crate::document::from_value(spec, "spec")?;
            request.check()?;
            EggopsDocument::Cluster(name, Box::new(request))
        }
        (API_VERSION, other) => {
            return Err(FieldError::new(
                "kind",
                format!(
                    "{other:?} is not one of Eggops' kinds wasmco takes (Machine, Infrastructure, Cluster)"
                ),
            ));
        }
        ("v1", "Secret") => EggopsDocument::Login(name, login(value)?),
        ("v1", "Namespace" | "PersistentVolume" | "PersistentVolumeClaim") => {
            EggopsDocument::Skipped(
                kind.to_owned(),
                name,
                "Eggops mounts its packages from a volume; wasmco reads them from its host's \
                 package directory, and keeps its objects by cluster provider, not namespace",
            )
        }
        _ => return Ok(None),
    }))
}

fn labels(value: &Value) -> Result<BTreeMap<String, String>, FieldError> {
    match value {
        Value::Null => Ok(BTreeMap::new()),
        labels => crate::document::from_value(labels, "metadata.labels"),
    }
}

/// A Secret's login: `stringData` as written, or `data` base64-encoded.
fn login(secret: &Value) -> Result<MachineLogin, FieldError> {
    let field = |key: &str| -> Result<Option<String>, FieldError> {
        if let Some(text) = secret["stringData"][key].as_str() {
            return Ok(Some(text.to_owned()));
        }
        if let Some(encoded) = secret["data"][key].as_str() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| {
                    FieldError::new(format!("data.{key}"), format!("is not base64: {e}"))
                })?;
            let text = String::from_utf8(bytes)
                .map_err(|_| FieldError::new(format!("data.{key}"), "is not UTF-8 text"))?;
            return Ok(Some(text));
        }
        // YAML reads `password: 123456` as a number.
        Ok(secret["stringData"][key]
            .as_number()
            .map(ToString::to_string))
    };
    let missing = |key: &str| FieldError::new(format!("stringData.{key}"), "is missing");
    match secret["type"].as_str().unwrap_or_default() {
        "kubernetes.io/basic-auth" => Ok(MachineLogin {
            username: field("username")?.ok_or_else(|| missing("username"))?,
            password: Some(field("password")?.ok_or_else(|| missing("password"))?),
            private_key: None,
        }),
        "kubernetes.io/ssh-auth" => Ok(MachineLogin {
            username: field("username")?.unwrap_or_else(|| "root".to_owned()),
            password: None,
            private_key: Some(field("ssh-privatekey")?.ok_or_else(|| missing("ssh-privatekey"))?),
        }),
        other => Err(FieldError::new(
            "type",
            format!(
                "{other:?}: machines log in with a kubernetes.io/basic-auth or kubernetes.io/ssh-auth Secret"
            ),
        )),
    }
}
