//! The renderer's wasmtime side: its engine, its compile cache, its
//! instances and their limits.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Serialize;
use wasmtime::{
    Config, Engine, Instance, InstancePre, Linker, Module, ResourceLimiter, Store, Trap,
};
use wasmtime_wasi::I32Exit;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

use super::{HelmConfig, HelmError, HelmLimits, RenderRequest, Rendered, Timings};

/// The renderer this build embeds: its gzipped module and the digest of
/// what it was built from.
#[derive(Clone, Copy)]
pub(super) struct Embedded {
    gzipped: &'static [u8],
    digest: &'static str,
}

#[cfg(helm_renderer)]
pub(super) const EMBEDDED: Option<Embedded> = Some(Embedded {
    gzipped: include_bytes!(env!("WASMCO_HELM_RENDERER")),
    digest: env!("WASMCO_HELM_RENDERER_DIGEST"),
});
#[cfg(not(helm_renderer))]
pub(super) const EMBEDDED: Option<Embedded> = None;

const TICK: Duration = Duration::from_millis(10);
/// Bytes of the renderer's stderr kept to explain a crash.
const STDERR_BYTES: usize = 64 << 10;

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
struct Response {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    stage: Option<String>,
    #[serde(flatten)]
    rendered: Option<Rendered>,
}

pub(super) struct Renderer {
    embedded: Embedded,
    config: HelmConfig,
    engine: Engine,
    module: OnceLock<Result<InstancePre<Guest>, HelmError>>,
    /// An initialised instance waiting for a request.
    warm: Mutex<Option<Ready>>,
    refilling: AtomicBool,
    ticker_stop: Arc<AtomicBool>,
}

impl Drop for Renderer {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

pub(super) struct Guest {
    wasi: WasiP1Ctx,
    memory: MemoryCap,
}

/// Caps the instance's memory and remembers that it had to.
struct MemoryCap {
    max: usize,
    refused: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max;
        self.refused |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// An instance past `_initialize`, with its pipes.
struct Ready {
    store: Store<Guest>,
    instance: Instance,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
}

impl Renderer {
    pub(super) fn new(embedded: Embedded, config: HelmConfig) -> Self {
        let mut wasmtime = Config::new();
        wasmtime
            .epoch_interruption(true)
            .parallel_compilation(true)
            .cranelift_opt_level(wasmtime::OptLevel::Speed);
        // Only the configuration can make this fail, and it is fixed here.
        let engine = Engine::new(&wasmtime).expect("the renderer's engine configuration is valid");
        let ticker_stop = Arc::new(AtomicBool::new(false));
        if let Err(error) = crate::engine::spawn_ticker(engine.clone(), TICK, ticker_stop.clone()) {
            tracing::warn!(%error, "no deadline ticker for the Helm renderer");
        }
        Renderer {
            embedded,
            config,
            engine,
            module: OnceLock::new(),
            warm: Mutex::new(None),
            refilling: AtomicBool::new(false),
            ticker_stop,
        }
    }

    fn limits(&self) -> HelmLimits {
        self.config.limits
    }

    /// The renderer, compiled once per process (and once per machine
    /// thanks to the cache); callers wait for the first compile.
    pub(super) fn module(&self) -> Result<&InstancePre<Guest>, HelmError> {
        self.module
            .get_or_init(|| {
                let started = Instant::now();
                let module = self.load_or_compile()?;
                let mut linker: Linker<Guest> = Linker::new(&self.engine);
                wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |guest: &mut Guest| {
                    &mut guest.wasi
                })
                .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
                let pre = linker
                    .instantiate_pre(&module)
                    .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
                tracing::info!(took = ?started.elapsed(), "Helm renderer ready");
                Ok(pre)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    fn load_or_compile(&self) -> Result<Module, HelmError> {
        let dir = &self.config.cache_dir;
        create_private_dir(dir).map_err(|e| {
            HelmError::Broken(format!("cannot use the cache at {}: {e}", dir.display()))
        })?;
        let engine_key = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            self.engine
                .precompile_compatibility_hash()
                .hash(&mut hasher);
            format!("{:016x}", hasher.finish())
        };
        let name = format!(
            "helm-renderer-{}-{engine_key}.cwasm",
            &self.embedded.digest[..16]
        );
        let path = dir.join(&name);
        // One compile per machine: other servers starting at the same time
        // wait here and then load what the first one wrote.
        let lock = File::create(dir.join("helm-renderer.lock"))
            .and_then(|file| file.lock().map(|()| file))
            .map_err(|e| HelmError::Broken(format!("cannot lock the renderer cache: {e}")))?;
        if path.exists() {
            match load(&self.engine, &path) {
                Ok(module) => return Ok(module),
                Err(error) => tracing::warn!(
                    path = %path.display(),
                    error = %crate::error::describe(&error),
                    "cached Helm renderer unusable; compiling again"
                ),
            }
        }
        tracing::info!("compiling the Helm renderer (once per machine; about a minute)");
        let started = Instant::now();
        let mut wasm = Vec::new();
        flate2::read::GzDecoder::new(self.embedded.gzipped)
            .read_to_end(&mut wasm)
            .map_err(|e| HelmError::Broken(format!("the embedded renderer is corrupt: {e}")))?;
        let module = Module::new(&self.engine, &wasm)
            .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
        tracing::info!(took = ?started.elapsed(), "Helm renderer compiled");
        if let Err(error) = store(dir, &path, &module) {
            tracing::warn!(path = %path.display(), %error, "could not cache the compiled Helm renderer");
        }
        prune(dir, &name);
        drop(lock);
        Ok(module)
    }

    /// Runs one request on an instance of its own.
    pub(super) fn run(self: &Arc<Self>, request: &[u8]) -> Result<Rendered, HelmError> {
        let started = Instant::now();
        let pre = self.module()?;
        let module_wait = started.elapsed();
        let taken = self.warm.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (ready, instantiate) = match taken {
            Some(ready) => (ready, Duration::ZERO),
            None => {
                let started = Instant::now();
                (self.initialise(pre)?, started.elapsed())
            }
        };
        let started = Instant::now();
        let outcome = self.render(ready, request);
        // Readied after the render, so that it does not compete with it.
        self.refill_in_background();
        let (mut rendered, memory_bytes) = outcome?;
        rendered.timings = Timings {
            module: module_wait,
            instantiate,
            render: started.elapsed(),
            memory_bytes,
        };
        Ok(rendered)
    }

    /// Readies the next instance unless one is ready or being readied.
    pub(super) fn refill(&self) {
        if !self.config.keep_warm {
            return;
        }
        if self
            .warm
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return;
        }
        let Ok(pre) = self.module() else { return };
        match self.initialise(pre) {
            Ok(ready) => {
                *self.warm.lock().unwrap_or_else(|p| p.into_inner()) = Some(ready);
            }
            Err(error) => tracing::warn!(%error, "could not ready a Helm renderer instance"),
        }
    }

    fn refill_in_background(self: &Arc<Self>) {
        if !self.config.keep_warm || self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("wasmco-helm-warm".into())
            .spawn(move || {
                this.refill();
                this.refilling.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.refilling.store(false, Ordering::Release);
        }
    }

    fn initialise(&self, pre: &InstancePre<Guest>) -> Result<Ready, HelmError> {
        let limits = self.limits();
        let stdout = MemoryOutputPipe::new(limits.output_bytes);
        let stderr = MemoryOutputPipe::new(STDERR_BYTES);
        let wasi = wasmtime_wasi::WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            // klog reads its program name at start.
            .args(&["helm-renderer"])
            // An instance renders once and is dropped: collecting garbage
            // only near the memory cap saves most of Go's GC work.
            .env("GOGC", "off")
            .env(
                "GOMEMLIMIT",
                format!("{}MiB", (limits.memory_bytes >> 20) * 3 / 4),
            )
            .build_p1();
        let mut store = Store::new(
            &self.engine,
            Guest {
                wasi,
                memory: MemoryCap {
                    max: limits.memory_bytes,
                    refused: false,
                },
            },
        );
        store.limiter(|guest| &mut guest.memory);
        store.set_epoch_deadline(ticks(limits.init_deadline));
        let instance = pre
            .instantiate(&mut store)
            .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
        let mut ready = Ready {
            store,
            instance,
            stdout,
            stderr,
        };
        let initialize = ready
            .instance
            .get_typed_func::<(), ()>(&mut ready.store, "_initialize")
            .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
        initialize
            .call(&mut ready.store, ())
            .map_err(|e| failure(&ready, &e, &limits, "initialising"))?;
        Ok(ready)
    }

    /// Renders on `ready`; the answer and the instance's memory size.
    fn render(&self, mut ready: Ready, request: &[u8]) -> Result<(Rendered, usize), HelmError> {
        let limits = self.limits();
        ready
            .store
            .set_epoch_deadline(ticks(limits.render_deadline));
        let size = i32::try_from(request.len())
            .map_err(|_| HelmError::Limit(format!("request size ({} bytes)", request.len())))?;
        let exported = |ready: &mut Ready, name: &str| {
            ready
                .instance
                .get_export(&mut ready.store, name)
                .ok_or_else(|| HelmError::Broken(format!("the renderer does not export {name}")))
        };
        let memory = exported(&mut ready, "memory")?
            .into_memory()
            .ok_or_else(|| HelmError::Broken("the renderer's memory is not a memory".into()))?;
        let input = ready
            .instance
            .get_typed_func::<i32, u32>(&mut ready.store, "input")
            .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
        let render = ready
            .instance
            .get_typed_func::<(), ()>(&mut ready.store, "render")
            .map_err(|e| HelmError::Broken(crate::error::describe(&e)))?;
        let at = input
            .call(&mut ready.store, size)
            .map_err(|e| failure(&ready, &e, &limits, "receiving the chart"))?;
        memory
            .write(&mut ready.store, at as usize, request)
            .map_err(|e| HelmError::Crashed(e.to_string()))?;
        render
            .call(&mut ready.store, ())
            .map_err(|e| failure(&ready, &e, &limits, "rendering"))?;
        let memory_bytes = memory.data_size(&ready.store);
        let output = ready.stdout.contents();
        let response: Response = serde_json::from_slice(&output).map_err(|e| {
            HelmError::Crashed(format!("unreadable answer ({e}); {}", stderr_tail(&ready)))
        })?;
        if let Some(message) = response.error {
            return Err(HelmError::Chart {
                stage: response.stage.unwrap_or_else(|| "render".into()),
                message,
            });
        }
        let rendered = response
            .rendered
            .ok_or_else(|| HelmError::Crashed("an empty answer".into()))?;
        Ok((rendered, memory_bytes))
    }
}

/// What the Go side prints before it renders when the chart's templates
/// can recurse (see `recursionSuspects` in the renderer).
const RECURSION_MARK: &str = "wasmco-recursion: ";

/// What a trap or exit of the renderer means.
fn failure(ready: &Ready, error: &wasmtime::Error, limits: &HelmLimits, doing: &str) -> HelmError {
    let stderr = ready.stderr.contents();
    let stderr = String::from_utf8_lossy(&stderr);
    // Go's own limit, or the engine's call stack under Go's calls.
    if error.downcast_ref::<Trap>() == Some(&Trap::StackOverflow)
        || stderr.contains("stack overflow")
        || stderr.contains("goroutine stack exceeds")
    {
        let through = stderr
            .lines()
            .find_map(|line| line.strip_prefix(RECURSION_MARK))
            .unwrap_or("tpl, rendering a value that renders itself");
        return HelmError::Chart {
            stage: "render".into(),
            message: format!(
                "the chart's templates recurse without end (rendering ran out of stack): {through}"
            ),
        };
    }
    if ready.store.data().memory.refused {
        return HelmError::Limit(format!("memory limit ({} MiB)", limits.memory_bytes >> 20));
    }
    if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        let deadline = if doing == "initialising" {
            limits.init_deadline
        } else {
            limits.render_deadline
        };
        return HelmError::Limit(format!("time limit ({deadline:?})"));
    }
    let text = format!("{error:#}");
    if text.contains("beyond capacity") {
        return HelmError::Limit(format!("output limit ({} MiB)", limits.output_bytes >> 20));
    }
    let stderr = stderr_tail(ready);
    if stderr.contains("out of memory") {
        return HelmError::Limit(format!("memory limit ({} MiB)", limits.memory_bytes >> 20));
    }
    match error.downcast_ref::<I32Exit>() {
        Some(exit) => HelmError::Crashed(format!("it exited ({}) while {doing}: {stderr}", exit.0)),
        None => HelmError::Crashed(format!(
            "{} while {doing}: {stderr}",
            crate::error::describe(error)
        )),
    }
}

fn stderr_tail(ready: &Ready) -> String {
    let stderr = ready.stderr.contents();
    let text = String::from_utf8_lossy(&stderr);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(8)
        .collect();
    if lines.is_empty() {
        "nothing on stderr".into()
    } else {
        lines.join("; ")
    }
}

fn ticks(deadline: Duration) -> u64 {
    u64::try_from(deadline.as_millis().div_ceil(TICK.as_millis()))
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Loads the renderer this module compiled.
#[allow(unsafe_code)]
fn load(engine: &Engine, path: &Path) -> wasmtime::Result<Module> {
    // SAFETY: wasmtime trusts a serialized module to hold valid machine
    // code. Files named helm-renderer-*.cwasm in this directory (the
    // user's own, made 0700) are written only by `store` below, from
    // `Module::serialize` of an engine with this configuration (its key is
    // in the name), and renamed into place whole; `deserialize_file`
    // checks the header's version and settings.
    unsafe { Module::deserialize_file(engine, path) }
}

fn store(dir: &Path, path: &Path, module: &Module) -> Result<(), String> {
    let bytes = module.serialize().map_err(|e| crate::error::describe(&e))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    std::io::Write::write_all(&mut file, &bytes).map_err(|e| e.to_string())?;
    file.persist(path).map_err(|e| e.to_string())?;
    Ok(())
}

/// Removes other builds of the renderer (160 MB each) from the cache.
fn prune(dir: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("helm-renderer-") && name.ends_with(".cwasm") && name != keep {
            let path: PathBuf = entry.path();
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::debug!(path = %path.display(), %error, "could not prune an old renderer");
            }
        }
    }
}
