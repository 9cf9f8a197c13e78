//! Helm charts, rendered by Helm's own engine: a Go program
//! (`plugins/helm-renderer`) built for wasip1 and run here in a sandbox of
//! its own, with no file system or network, a deadline and a memory cap.
//!
//! The renderer's module is big (80 MB of wasm: Helm, Sprig and the
//! Kubernetes types it links), so it is compiled once per machine into a
//! cache shared by every data directory, in the background at start-up. Go
//! and Helm take tens of milliseconds to initialise, so one initialised
//! instance is kept ready; each render still gets an instance of its own,
//! and nothing of one chart survives into the next.

mod guest;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How the renderer is set up.
#[derive(Debug, Clone)]
pub struct HelmConfig {
    /// Where the compiled renderer is cached (shared by every server on
    /// the machine: it is wasmco's own code, not a user's).
    pub cache_dir: PathBuf,
    /// What one render may use.
    pub limits: HelmLimits,
    /// Keep an initialised instance ready for the next render.
    pub keep_warm: bool,
    /// Renders (and chart checks) at once: each may use the memory cap,
    /// so this bounds what charts can take of the host together.
    pub concurrent_renders: usize,
    /// How long a render waits for its turn before it is refused as busy.
    pub queue_wait: Duration,
}

impl Default for HelmConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        HelmConfig {
            cache_dir: default_cache_dir(),
            limits: HelmLimits::default(),
            keep_warm: true,
            concurrent_renders: cores.clamp(1, 4),
            queue_wait: Duration::from_secs(30),
        }
    }
}

/// `$XDG_CACHE_HOME/wasmco`, else `~/.cache/wasmco`.
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::home_dir().map(|home| home.join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("wasmco")
}

/// What one render may use. Helm needs more than a controller: Go's
/// runtime, Helm's package state and the chart's values all live in the
/// instance's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelmLimits {
    /// Initialising Go and Helm in a fresh instance.
    pub init_deadline: Duration,
    /// Rendering one chart.
    pub render_deadline: Duration,
    /// The instance's linear memory.
    pub memory_bytes: usize,
    /// The rendered output.
    pub output_bytes: usize,
}

impl Default for HelmLimits {
    fn default() -> Self {
        HelmLimits {
            init_deadline: Duration::from_secs(10),
            render_deadline: Duration::from_secs(10),
            memory_bytes: 256 << 20,
            output_bytes: 16 << 20,
        }
    }
}

/// Why a chart was not rendered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HelmError {
    /// This build has no renderer.
    #[error(
        "this wasmco was built without Helm support (Go was not installed when it was built); \
         install Go 1.24 or later and build it again to deploy Helm charts"
    )]
    Unavailable,
    /// The renderer itself would not compile or start.
    #[error("the Helm renderer does not start: {0}")]
    Broken(String),
    /// Helm refused the chart or its values; the message is Helm's.
    #[error("{message}")]
    Chart {
        /// Where: `load` (the chart), `values` or `render` (a template).
        stage: String,
        /// Helm's message.
        message: String,
    },
    /// The chart made the renderer exceed one of its limits.
    #[error("the chart exceeded the Helm renderer's {0}")]
    Limit(String),
    /// The renderer failed in a way Helm does not report.
    #[error("the Helm renderer failed: {0}")]
    Crashed(String),
    /// Every render slot stayed taken for as long as a render waits.
    #[error(
        "the server is busy rendering other charts (none of its {slots} render slots freed up in {waited:?}); try again shortly"
    )]
    Busy {
        /// Renders at once.
        slots: usize,
        /// How long this one waited.
        waited: Duration,
    },
}

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

/// The Helm renderer: cheap to clone, shared by the process.
#[derive(Clone)]
pub struct HelmRenderer {
    inner: Option<Arc<guest::Renderer>>,
    slots: Arc<Slots>,
}

/// Turns at rendering, a bounded number at a time.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
    size: usize,
    wait: Duration,
}

/// One turn at rendering; the next waiting render goes when it is dropped.
struct Turn<'a>(&'a Slots);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

impl Slots {
    fn new(size: usize, wait: Duration) -> Self {
        let size = size.max(1);
        Slots {
            free: Mutex::new(size),
            freed: Condvar::new(),
            size,
            wait,
        }
    }

    /// Waits (bounded) for a turn.
    fn take(&self) -> Result<Turn<'_>, HelmError> {
        let free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        let (mut free, waited) = self
            .freed
            .wait_timeout_while(free, self.wait, |free| *free == 0)
            .unwrap_or_else(|p| p.into_inner());
        if waited.timed_out() && *free == 0 {
            return Err(HelmError::Busy {
                slots: self.size,
                waited: self.wait,
            });
        }
        *free -= 1;
        Ok(Turn(self))
    }
}

impl HelmRenderer {
    /// The renderer this build embeds (refusing every chart when it has
    /// none). Nothing is compiled yet: see [`HelmRenderer::start`].
    pub fn new(config: HelmConfig) -> Self {
        let slots = Arc::new(Slots::new(config.concurrent_renders, config.queue_wait));
        HelmRenderer {
            inner: guest::EMBEDDED.map(|embedded| Arc::new(guest::Renderer::new(embedded, config))),
            slots,
        }
    }

    /// Whether this build can render charts at all.
    pub fn available(&self) -> bool {
        self.inner.is_some()
    }

    /// Compiles (or loads) the renderer and readies an instance on a
    /// thread of its own, so that no request waits for it except one that
    /// needs a chart. Logs how long it took.
    pub fn start(&self) {
        if let Some(inner) = &self.inner {
            let inner = inner.clone();
            let spawned = std::thread::Builder::new()
                .name("wasmco-helm-compile".into())
                .spawn(move || {
                    if inner.module().is_ok() {
                        inner.refill();
                    }
                });
            if let Err(error) = spawned {
                tracing::warn!(%error, "cannot compile the Helm renderer in the background");
            }
        }
    }

    /// Compiles (or loads) the renderer now, on this thread; answers how
    /// long it took. For `wasmco` commands that warm the cache.
    pub fn prepare(&self) -> Result<Duration, HelmError> {
        let inner = self.inner.as_ref().ok_or(HelmError::Unavailable)?;
        let started = std::time::Instant::now();
        inner.module()?;
        Ok(started.elapsed())
    }

    /// Loads `chart` and checks it the way `helm install` does before it
    /// renders: not a library chart, no dependency missing from `charts/`.
    /// Blocks: call it where blocking is allowed.
    pub fn inspect(&self, chart: &[u8]) -> Result<ChartInfo, HelmError> {
        Ok(self.call(&guest::Request::inspect(chart))?.chart)
    }

    /// Renders a chart as a client-only `helm install --dry-run
    /// --include-crds` does. Blocks: call it where blocking is allowed.
    pub fn render(&self, request: &RenderRequest) -> Result<Rendered, HelmError> {
        self.call(&guest::Request::render(request))
    }

    fn call(&self, request: &guest::Request) -> Result<Rendered, HelmError> {
        let inner = self.inner.as_ref().ok_or(HelmError::Unavailable)?;
        let body = serde_json::to_vec(request).map_err(|e| HelmError::Crashed(e.to_string()))?;
        let _turn = self.slots.take()?;
        inner.run(&body)
    }
}

impl std::fmt::Debug for HelmRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HelmRenderer")
            .field("available", &self.available())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_take_turns_and_a_long_wait_is_refused() {
        let slots = Arc::new(Slots::new(2, Duration::from_millis(50)));
        let first = slots.take().unwrap();
        let _second = slots.take().unwrap();
        let refused = slots.take().err().unwrap();
        assert!(
            matches!(refused, HelmError::Busy { slots: 2, .. }),
            "{refused}"
        );
        let waiter = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take().map(drop).is_ok())
        };
        drop(first);
        assert!(
            waiter.join().unwrap(),
            "a freed slot goes to the one waiting"
        );
    }
}
