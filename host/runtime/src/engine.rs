//! The one wasmtime engine of the process and the clock that enforces deadlines.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::error::{self, RuntimeError};

/// Core instances, memories and tables one controller instance may use: a
/// wasm32-wasip2 Rust component has its main module plus a few adapter shims.
const CORE_INSTANCES_PER_CONTROLLER: u32 = 8;
const MEMORIES_PER_CONTROLLER: u32 = 2;
const TABLES_PER_CONTROLLER: u32 = 4;
/// Bytes of a slot's memory kept resident between calls.
const KEEP_RESIDENT: usize = 4 << 20;

/// The engine settings compiled code depends on: a compiler process is
/// handed them to produce code this engine loads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EngineSettings {
    pub pooling: bool,
    pub memory_bytes: u64,
    pub max_concurrent_instances: u32,
}

/// The engine plus the ticker thread that advances its epoch.
pub(super) struct SandboxEngine {
    engine: Engine,
    settings: EngineSettings,
    tick: Duration,
    ticker_stop: Arc<AtomicBool>,
}

impl SandboxEngine {
    /// An engine with `settings`, falling back from the pooling allocator
    /// to on-demand allocation when the machine refuses the pool.
    pub(crate) fn new(settings: EngineSettings, tick: Duration) -> Result<Self, RuntimeError> {
        let pooled = EngineSettings {
            pooling: true,
            ..settings
        };
        let (engine, settings) = match Engine::new(&wasmtime_config(&pooled)) {
            Ok(engine) => (engine, pooled),
            Err(error) => {
                tracing::warn!(
                    error = %error,
                    "pooling allocator refused (not enough address space?); using on-demand allocation"
                );
                let on_demand = EngineSettings {
                    pooling: false,
                    ..settings
                };
                let engine = Engine::new(&wasmtime_config(&on_demand))
                    .map_err(|e| RuntimeError::Engine(error::describe(&e)))?;
                (engine, on_demand)
            }
        };
        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), tick, ticker_stop.clone())?;
        Ok(SandboxEngine {
            engine,
            settings,
            tick,
            ticker_stop,
        })
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The settings the engine was made with, pooling as it turned out.
    pub(crate) fn settings(&self) -> EngineSettings {
        self.settings
    }

    /// Epoch ticks for `deadline`: the ticker's phase is unknown, so one extra
    /// tick guarantees the guest gets at least `deadline` and at most one tick more.
    pub(crate) fn deadline_ticks(&self, deadline: Duration) -> u64 {
        let tick = self.tick.as_nanos().max(1);
        let ticks = deadline.as_nanos().div_ceil(tick);
        u64::try_from(ticks).unwrap_or(u64::MAX - 1) + 1
    }
}

impl Drop for SandboxEngine {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

pub(crate) fn wasmtime_config(settings: &EngineSettings) -> Config {
    let mut wasmtime = Config::new();
    wasmtime
        .wasm_component_model(true)
        .epoch_interruption(true)
        .parallel_compilation(true)
        .cranelift_opt_level(wasmtime::OptLevel::Speed);
    // `WASMCO_PROFILE=perfmap` names controllers' compiled code for `perf`.
    if std::env::var_os("WASMCO_PROFILE").is_some_and(|v| v == "perfmap") {
        wasmtime.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    if settings.pooling {
        let slots = settings.max_concurrent_instances.max(1);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(slots)
            .total_core_instances(slots * CORE_INSTANCES_PER_CONTROLLER)
            .total_memories(slots * MEMORIES_PER_CONTROLLER)
            .total_tables(slots * TABLES_PER_CONTROLLER)
            .max_memory_size(usize::try_from(settings.memory_bytes).unwrap_or(usize::MAX))
            // Every call is a fresh instance in a reused slot: resetting only
            // the pages the last call dirtied (pagemap scan, Linux 6.7+) and
            // keeping them resident saves the next call its page faults.
            .pagemap_scan(wasmtime::Enabled::Auto)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT);
        wasmtime.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    wasmtime
}

pub(crate) fn spawn_ticker(
    engine: Engine,
    tick: Duration,
    stop: Arc<AtomicBool>,
) -> Result<(), RuntimeError> {
    std::thread::Builder::new()
        .name("wasmco-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .map(drop)
        .map_err(RuntimeError::Ticker)
}
