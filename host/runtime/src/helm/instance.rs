//! One instance of the renderer: its store with its memory cap and pipes,
//! readied by `_initialize`, rendering one request, and what its traps
//! and exits mean.

use std::time::Duration;

use wasmtime::{Engine, Instance, InstancePre, Linker, ResourceLimiter, Store, Trap};
use wasmtime_wasi::I32Exit;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

use super::config::HelmLimits;
use super::error::HelmError;
use super::model::Rendered;
use super::wire::Response;
use crate::error::describe;

/// How often the renderer's deadline clock ticks.
pub(super) const TICK: Duration = Duration::from_millis(10);
/// Bytes of the renderer's stderr kept to explain a crash.
const STDERR_BYTES: usize = 64 << 10;

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
pub(super) struct Ready {
    store: Store<Guest>,
    instance: Instance,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
}

/// The WASI (preview 1) imports an instance is linked to.
pub(super) fn linker(engine: &Engine) -> Result<Linker<Guest>, HelmError> {
    let mut linker: Linker<Guest> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |guest: &mut Guest| &mut guest.wasi)
        .map_err(|e| HelmError::Broken(describe(&e)))?;
    Ok(linker)
}

impl Ready {
    /// A fresh instance of `pre`, past `_initialize`.
    pub(super) fn initialise(
        engine: &Engine,
        pre: &InstancePre<Guest>,
        limits: &HelmLimits,
    ) -> Result<Self, HelmError> {
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
            engine,
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
            .map_err(|e| HelmError::Broken(describe(&e)))?;
        let mut ready = Ready {
            store,
            instance,
            stdout,
            stderr,
        };
        let initialize = ready
            .instance
            .get_typed_func::<(), ()>(&mut ready.store, "_initialize")
            .map_err(|e| HelmError::Broken(describe(&e)))?;
        initialize
            .call(&mut ready.store, ())
            .map_err(|e| failure(&ready, &e, limits, "initialising"))?;
        Ok(ready)
    }

    /// Renders `request`; the answer and the instance's memory size.
    pub(super) fn render(
        mut self,
        request: &[u8],
        limits: &HelmLimits,
    ) -> Result<(Rendered, usize), HelmError> {
        self.store.set_epoch_deadline(ticks(limits.render_deadline));
        let size = i32::try_from(request.len())
            .map_err(|_| HelmError::Limit(format!("request size ({} bytes)", request.len())))?;
        let exported = |ready: &mut Ready, name: &str| {
            ready
                .instance
                .get_export(&mut ready.store, name)
                .ok_or_else(|| HelmError::Broken(format!("the renderer does not export {name}")))
        };
        let memory = exported(&mut self, "memory")?
            .into_memory()
            .ok_or_else(|| HelmError::Broken("the renderer's memory is not a memory".into()))?;
        let input = self
            .instance
            .get_typed_func::<i32, u32>(&mut self.store, "input")
            .map_err(|e| HelmError::Broken(describe(&e)))?;
        let render = self
            .instance
            .get_typed_func::<(), ()>(&mut self.store, "render")
            .map_err(|e| HelmError::Broken(describe(&e)))?;
        let at = input
            .call(&mut self.store, size)
            .map_err(|e| failure(&self, &e, limits, "receiving the chart"))?;
        memory
            .write(&mut self.store, at as usize, request)
            .map_err(|e| HelmError::Crashed(e.to_string()))?;
        render
            .call(&mut self.store, ())
            .map_err(|e| failure(&self, &e, limits, "rendering"))?;
        let memory_bytes = memory.data_size(&self.store);
        let output = self.stdout.contents();
        let response: Response = serde_json::from_slice(&output).map_err(|e| {
            HelmError::Crashed(format!("unreadable answer ({e}); {}", stderr_tail(&self)))
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
        None => HelmError::Crashed(format!("{} while {doing}: {stderr}", describe(error))),
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
