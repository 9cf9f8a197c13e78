//! What goes into a render and what comes out of it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A chart to render, with EMCO's inputs.
#[derive(Debug, Clone, Default)]
pub struct RenderRequest {
    /// The chart `.tgz`.
    pub chart: Vec<u8>,
    /// Values files (YAML), lowest precedence first (as `helm -f`).
    pub value_files: Vec<String>,
    /// `--set` strings (`image.tag=1.2`), applied after the files in order.
    pub set: Vec<String>,
    /// The release name (EMCO: the DIG's `spec.version`).
    pub release: String,
    /// The release namespace.
    pub namespace: String,
    /// `.Capabilities.KubeVersion`; Helm's default when unset.
    pub kube_version: Option<String>,
}

/// What Helm says about a chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartInfo {
    /// `Chart.yaml`'s name.
    pub name: String,
    /// `Chart.yaml`'s version.
    pub version: String,
    /// `Chart.yaml`'s appVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// Templates, the subcharts' included.
    pub templates: usize,
    /// Files in `crds/`, the subcharts' included.
    pub crds: usize,
}

/// One rendered manifest file (it may hold several documents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedManifest {
    /// The template (or CRD file) it came from, e.g. `web/templates/svc.yaml`.
    pub source: String,
    /// The YAML.
    pub content: String,
}

/// A rendered hook, as Helm parsed its annotations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderedHook {
    /// The object's name.
    pub name: String,
    /// The object's kind.
    pub kind: String,
    /// The template it came from.
    pub source: String,
    /// `helm.sh/hook`: `pre-install`, `post-install`, … (test hooks dropped).
    pub events: Vec<String>,
    /// `helm.sh/hook-weight`.
    pub weight: i32,
    /// `helm.sh/hook-delete-policy`.
    pub delete_policies: Vec<String>,
    /// The YAML.
    pub content: String,
}

/// A rendered chart: manifests in Helm's install order (CRDs first), and
/// hooks by weight.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Rendered {
    /// The chart.
    pub chart: ChartInfo,
    /// Its manifests.
    pub manifests: Vec<RenderedManifest>,
    /// Its hooks.
    pub hooks: Vec<RenderedHook>,
    /// Where the time went.
    #[serde(skip)]
    pub timings: Timings,
}

/// Where one render's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Waiting for the renderer's module (compiled or loaded).
    pub module: Duration,
    /// Initialising an instance on the request path (zero when one was ready).
    pub instantiate: Duration,
    /// Rendering, from the request going in to the answer coming out.
    pub render: Duration,
    /// The instance's linear memory once done: its peak, as wasm memory
    /// never shrinks.
    pub memory_bytes: usize,
}
