//! The JSON the renderer's Go side reads and writes (see
//! `plugins/helm-renderer/main.go`).

use base64::Engine as _;
use serde::Serialize;

use super::model::{RenderRequest, Rendered};

/// The request the Go side reads (see `plugins/helm-renderer/main.go`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request {
    op: &'static str,
    /// Base64, as Go's encoding/json reads a `[]byte`.
    chart: String,
    value_files: Vec<String>,
    set: Vec<String>,
    release: String,
    namespace: String,
    kube_version: String,
}

impl Request {
    pub(super) fn inspect(chart: &[u8]) -> Self {
        Request {
            op: "inspect",
            chart: base64::engine::general_purpose::STANDARD.encode(chart),
            value_files: Vec::new(),
            set: Vec::new(),
            release: String::new(),
            namespace: String::new(),
            kube_version: String::new(),
        }
    }

    pub(super) fn render(request: &RenderRequest) -> Self {
        Request {
            op: "render",
            chart: base64::engine::general_purpose::STANDARD.encode(&request.chart),
            value_files: request.value_files.clone(),
            set: request.set.clone(),
            release: request.release.clone(),
            namespace: request.namespace.clone(),
            kube_version: request.kube_version.clone().unwrap_or_default(),
        }
    }
}

/// The answer, or Helm's error.
#[derive(serde::Deserialize)]
pub(super) struct Response {
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub stage: Option<String>,
    #[serde(flatten)]
    pub rendered: Option<Rendered>,
}
