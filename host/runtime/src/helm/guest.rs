//! The renderer's wasmtime side: its engine and deadline clock, its
//! module, and the initialised instance it keeps ready.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::{Config, Engine, InstancePre};

use super::config::{HelmConfig, HelmLimits};
use super::error::HelmError;
use super::instance::{self, Guest, Ready};
use super::model::{Rendered, Timings};
use super::module::{self, Source};
use crate::error::describe;

pub(super) struct Renderer {
    source: Source,
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

impl Renderer {
    pub(super) fn new(source: Source, config: HelmConfig) -> Self {
        let mut wasmtime = Config::new();
        wasmtime
            .epoch_interruption(true)
            .parallel_compilation(true)
            .cranelift_opt_level(wasmtime::OptLevel::Speed);
        // Only the configuration can make this fail, and it is fixed here.
        let engine = Engine::new(&wasmtime).expect("the renderer's engine configuration is valid");
        let ticker_stop = Arc::new(AtomicBool::new(false));
        if let Err(error) =
            crate::engine::spawn_ticker(engine.clone(), instance::TICK, ticker_stop.clone())
        {
            tracing::warn!(%error, "no deadline ticker for the Helm renderer");
        }
        Renderer {
            source,
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
                let module =
                    module::load_or_compile(&self.engine, &self.source, &self.config.cache_dir)?;
                let pre = instance::linker(&self.engine)?
                    .instantiate_pre(&module)
                    .map_err(|e| HelmError::Broken(describe(&e)))?;
                tracing::info!(took = ?started.elapsed(), "Helm renderer ready");
                Ok(pre)
            })
            .as_ref()
            .map_err(Clone::clone)
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
                (
                    Ready::initialise(&self.engine, pre, &self.limits())?,
                    started.elapsed(),
                )
            }
        };
        let started = Instant::now();
        let outcome = ready.render(request, &self.limits());
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
        match Ready::initialise(&self.engine, pre, &self.limits()) {
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
}
