//! Helm charts, rendered by Helm's own engine: a Go program
//! (`plugins/helm-renderer`) built for wasip1 and run here in a sandbox of
//! its own, with no file system or network, a deadline and a memory cap.
//!
//! The renderer's module is big (80 MB of wasm: Helm, Sprig and the
//! Kubernetes types it links), so it is built with Go (unless this binary
//! embeds it) and compiled once per machine into a cache shared by every
//! data directory, in the background at start-up. Go
//! and Helm take tens of milliseconds to initialise, so one initialised
//! instance is kept ready; each render still gets an instance of its own,
//! and nothing of one chart survives into the next.

mod config;
mod error;
mod guest;
mod instance;
mod model;
mod module;
mod slots;
mod wire;

use std::sync::Arc;
use std::time::Duration;

pub use config::{HelmConfig, HelmLimits, default_cache_dir};
pub use error::HelmError;
pub use model::{ChartInfo, RenderRequest, Rendered, RenderedHook, RenderedManifest, Timings};

use slots::Slots;

/// The Helm renderer: cheap to clone, shared by the process.
#[derive(Clone)]
pub struct HelmRenderer {
    inner: Option<Arc<guest::Renderer>>,
    slots: Arc<Slots>,
}

impl HelmRenderer {
    /// The renderer this build has (refusing every chart when it has
    /// none). Nothing is built or compiled yet: see [`HelmRenderer::start`].
    pub fn new(config: HelmConfig) -> Self {
        let slots = Arc::new(Slots::new(config.concurrent_renders, config.queue_wait));
        HelmRenderer {
            inner: module::SOURCE.map(|source| Arc::new(guest::Renderer::new(source, config))),
            slots,
        }
    }

    /// Whether this build can render charts at all.
    pub fn available(&self) -> bool {
        self.inner.is_some()
    }

    /// Builds and compiles (or loads) the renderer and readies an instance on a
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
        Ok(self.call(&wire::Request::inspect(chart))?.chart)
    }

    /// Renders a chart as a client-only `helm install --dry-run
    /// --include-crds` does. Blocks: call it where blocking is allowed.
    pub fn render(&self, request: &RenderRequest) -> Result<Rendered, HelmError> {
        self.call(&wire::Request::render(request))
    }

    fn call(&self, request: &wire::Request) -> Result<Rendered, HelmError> {
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
