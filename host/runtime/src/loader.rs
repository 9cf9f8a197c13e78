//! The process's runtime: one wasmtime engine, its WASI linker and the
//! compile cache, and loading a component as a [`Controller`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Linker;

use wasmco_core::controllers::ControllerKind;

use crate::cache::CompilerProcess;
use crate::controller::{Controller, ControllerPre, check_world};
use crate::engine::{EngineSettings, SandboxEngine};
use crate::error::{self, RegistrationError, RuntimeError};
use crate::limits::{ControllerLimits, LimitOverrides};
use crate::precheck::{self, CodeLimits};
use crate::sandbox::{self, Sandbox};
use crate::{cache, metrics};

/// How the process-wide runtime is set up.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled controllers are cached.
    pub cache_dir: PathBuf,
    /// The limits every call gets unless a controller's registration tightens them.
    pub default_limits: ControllerLimits,
    /// How often the deadline clock ticks; a deadline is enforced within one tick.
    pub epoch_tick: Duration,
    /// How many controller instances may be alive at once (pooling allocator slots).
    pub max_concurrent_instances: u32,
    /// The shape of code a component may have before it is compiled.
    pub code_limits: CodeLimits,
    /// Compile in a child process with a time limit (else in this one).
    pub compiler: Option<CompilerProcess>,
}

impl RuntimeConfig {
    /// Defaults with the cache in `cache_dir`.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        RuntimeConfig {
            cache_dir: cache_dir.into(),
            default_limits: ControllerLimits::default(),
            epoch_tick: Duration::from_millis(10),
            max_concurrent_instances: 64,
            code_limits: CodeLimits::default(),
            compiler: None,
        }
    }
}

/// The process's wasmtime engine, its WASI linker and the compile cache.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Arc<SandboxEngine>,
    linker: Linker<Sandbox>,
    cache: cache::CompileCache,
    default_limits: ControllerLimits,
    code_limits: CodeLimits,
    metrics: metrics::ControllerMetrics,
}

impl Runtime {
    /// Builds the engine (pooling allocator where the machine allows it) and
    /// starts the deadline ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, RuntimeError> {
        let settings = EngineSettings {
            pooling: true,
            memory_bytes: config.default_limits.memory_bytes,
            max_concurrent_instances: config.max_concurrent_instances,
        };
        let engine = Arc::new(SandboxEngine::new(settings, config.epoch_tick)?);
        let linker = sandbox::linker(engine.engine()).map_err(RuntimeError::Linker)?;
        let compiler = config
            .compiler
            .clone()
            .map(|process| (process, engine.settings()));
        let cache = cache::CompileCache::open(&config.cache_dir, engine.engine(), compiler)?;
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                cache,
                default_limits: config.default_limits,
                code_limits: config.code_limits,
                metrics: metrics::ControllerMetrics::default(),
            }),
        })
    }

    /// What the controller calls cost and how they ended.
    pub fn metrics(&self) -> &metrics::ControllerMetrics {
        &self.inner.metrics
    }

    /// Whether the pooling allocator is in use (false: it fell back to on-demand).
    pub fn uses_pooling_allocator(&self) -> bool {
        self.inner.engine.settings().pooling
    }

    /// The limits a controller gets when its registration sets none.
    pub fn default_limits(&self) -> &ControllerLimits {
        &self.inner.default_limits
    }

    /// Checks and prepares a component for calls: compiles it (or loads it from
    /// the cache), refuses imports outside the sandbox and a world other than
    /// `kind`'s, and pre-instantiates it.
    pub fn load(
        &self,
        name: &str,
        kind: ControllerKind,
        wasm: &[u8],
        limits: &LimitOverrides,
    ) -> Result<Controller, RegistrationError> {
        let limits = self.inner.default_limits.tightened_by(limits)?;
        if !wasmparser::Parser::is_component(wasm) {
            return Err(if wasmparser::Parser::is_core_wasm(wasm) {
                RegistrationError::CoreModule
            } else {
                RegistrationError::NotWasm
            });
        }
        // Read before anything is compiled: a component refused for its
        // imports, world or code shape costs one pass over its bytes.
        precheck::precheck(wasm, kind, &self.inner.code_limits, sandbox::allowed_import)?;
        let compiled = self.inner.cache.compile(self.inner.engine.engine(), wasm)?;
        self.inner.metrics.compiled(compiled.cached);
        sandbox::check_imports(self.inner.engine.engine(), &compiled.component)?;
        let version = check_world(self.inner.engine.engine(), &compiled.component, kind)?;
        let instance_pre = self
            .inner
            .linker
            .instantiate_pre(&compiled.component)
            .map_err(|e| RegistrationError::Link(error::describe(&e)))?;
        let pre = ControllerPre::new(instance_pre, kind, version)?;
        let controller = Controller {
            name: name.to_owned(),
            digest: compiled.digest.clone(),
            size: wasm.len(),
            limits,
            pre,
            engine: self.inner.engine.clone(),
            metrics: self.inner.metrics.clone(),
        };
        // A component whose start-up alone breaks its limits (a huge initial
        // memory, say) is refused now rather than on its first call.
        controller
            .instantiate()
            .map_err(|e| RegistrationError::Instantiate(e.failure.to_string()))?;
        // Cached only once accepted: a refused component leaves nothing behind.
        self.inner.cache.keep(&compiled);
        Ok(controller)
    }
}
