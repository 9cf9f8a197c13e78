//! The sandbox controllers run in, and the host side of their [`contract`].
//!
//! One [`Runtime`] (one wasmtime engine) serves the whole process. A controller
//! is compiled once when it is registered, cached on disk by content hash, and
//! pre-instantiated; a call then costs a fresh store and an instantiation.
//! Every call runs under a deadline, a memory cap and instance/table caps, and
//! sees no file system, network, environment or clock.

pub mod builtin;
mod cache;
pub mod contract;
mod engine;
mod error;
pub mod helm;
mod limits;
mod log;
pub mod metrics;
mod precheck;
mod sandbox;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sandbox::Sandbox;
use wasmtime::component::{Component, Linker};

use crate::contract::{
    ActionControllerPre, ActionEdit, ActionRequest, ContractVersion, PlacementControllerPre,
    PlacementEdit, PlacementRequest, v0_1,
};

pub use cache::{CompilerProcess, DEFAULT_COMPILE_TIMEOUT, compile_to_file};
pub use error::{CallError, CallFailure, RegistrationError, RuntimeError};
pub use limits::{ControllerLimits, LimitOverrides};
pub use log::ControllerLog;
pub use precheck::{CodeLimits, declared_intents};
pub use wasmco_core::controllers::ControllerKind;

/// The exports a component of `kind` may have, one per contract version,
/// newest first (for messages).
fn export_names(kind: ControllerKind) -> String {
    ContractVersion::ALL
        .map(|version| version.export(kind))
        .join(" or ")
}

/// The kind a component says it is by its top-level exports, read without
/// compiling it; `None` when it exports neither world.
pub fn kind_exported_by(wasm: &[u8]) -> Option<ControllerKind> {
    use wasmparser::Payload;
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.ok()? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports {
                    let name = export.ok()?.name.name;
                    for kind in [ControllerKind::Placement, ControllerKind::Action] {
                        if ContractVersion::exported(kind, [name]).is_some() {
                            return Some(kind);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    None
}

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
    engine: engine::SandboxEngine,
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
        let engine = engine::SandboxEngine::new(&config)?;
        let linker = sandbox::linker(engine.engine()).map_err(RuntimeError::Linker)?;
        let compiler = config.compiler.clone().map(|process| {
            let settings = cache::EngineSettings {
                pooling: engine.pooling(),
                memory_bytes: config.default_limits.memory_bytes,
                max_concurrent_instances: config.max_concurrent_instances,
            };
            (process, settings)
        });
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
        self.inner.engine.pooling()
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
        let mismatch = |e: wasmtime::Error| RegistrationError::WorldMismatch(error::describe(&e));
        let pre = match (kind, version) {
            (ControllerKind::Placement, ContractVersion::V0_2) => ControllerPre::Placement(
                PlacementControllerPre::new(instance_pre).map_err(mismatch)?,
            ),
            (ControllerKind::Action, ContractVersion::V0_2) => {
                ControllerPre::Action(ActionControllerPre::new(instance_pre).map_err(mismatch)?)
            }
            (ControllerKind::Placement, ContractVersion::V0_1) => ControllerPre::PlacementV0_1(
                v0_1::PlacementControllerPre::new(instance_pre).map_err(mismatch)?,
            ),
            (ControllerKind::Action, ContractVersion::V0_1) => ControllerPre::ActionV0_1(
                v0_1::ActionControllerPre::new(instance_pre).map_err(mismatch)?,
            ),
        };
        let controller = Controller {
            name: name.to_owned(),
            digest: compiled.digest.clone(),
            size: wasm.len(),
            limits,
            pre,
            runtime: self.clone(),
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

/// The contract version whose `kind` interface the component exports;
/// refuses one that exports none, naming what it exports instead.
fn check_world(
    engine: &wasmtime::Engine,
    component: &Component,
    kind: ControllerKind,
) -> Result<ContractVersion, RegistrationError> {
    let exports: Vec<String> = component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    if let Some(version) = ContractVersion::exported(kind, exports.iter().map(String::as_str)) {
        return Ok(version);
    }
    Err(RegistrationError::WrongWorld {
        kind,
        expected: export_names(kind),
        found: if exports.is_empty() {
            "nothing".to_owned()
        } else {
            exports.join(", ")
        },
    })
}

enum ControllerPre {
    Placement(PlacementControllerPre<Sandbox>),
    Action(ActionControllerPre<Sandbox>),
    PlacementV0_1(v0_1::PlacementControllerPre<Sandbox>),
    ActionV0_1(v0_1::ActionControllerPre<Sandbox>),
}

/// A registered controller, ready to be called.
pub struct Controller {
    name: String,
    digest: String,
    size: usize,
    limits: ControllerLimits,
    pre: ControllerPre,
    runtime: Runtime,
}

/// What a successful call returned, with what the controller printed.
#[derive(Debug)]
pub struct CallOutput<T> {
    /// The controller's answer.
    pub value: T,
    /// What the controller wrote to stdout and stderr.
    pub log: ControllerLog,
    /// The bytes of linear memory the call ended with, all memories
    /// together: its peak, as memories only grow.
    pub memory_bytes: usize,
}

impl Controller {
    /// The name it was registered under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Placement or action.
    pub fn kind(&self) -> ControllerKind {
        match self.pre {
            ControllerPre::Placement(_) | ControllerPre::PlacementV0_1(_) => {
                ControllerKind::Placement
            }
            ControllerPre::Action(_) | ControllerPre::ActionV0_1(_) => ControllerKind::Action,
        }
    }

    /// The sha256 of the component, hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The component's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The version of the contract it was built against.
    pub fn contract(&self) -> ContractVersion {
        match self.pre {
            ControllerPre::Placement(_) | ControllerPre::Action(_) => ContractVersion::V0_2,
            ControllerPre::PlacementV0_1(_) | ControllerPre::ActionV0_1(_) => ContractVersion::V0_1,
        }
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &ControllerLimits {
        &self.limits
    }

    /// Instantiates the controller once, under its limits, without calling it.
    pub fn instantiate(&self) -> Result<(), CallError> {
        let started = std::time::Instant::now();
        let instantiated = self.call(|store| {
            match &self.pre {
                ControllerPre::Placement(pre) => {
                    pre.instantiate(&mut *store)?;
                }
                ControllerPre::Action(pre) => {
                    pre.instantiate(&mut *store)?;
                }
                ControllerPre::PlacementV0_1(pre) => {
                    pre.instantiate(&mut *store)?;
                }
                ControllerPre::ActionV0_1(pre) => {
                    pre.instantiate(&mut *store)?;
                }
            }
            Ok(Ok(()))
        });
        self.runtime
            .inner
            .metrics
            .instantiated(&self.name, started.elapsed().as_secs_f64());
        instantiated.map(drop)
    }

    /// Calls a placement controller in a fresh instance.
    pub fn place(
        &self,
        request: &PlacementRequest,
    ) -> Result<CallOutput<Vec<PlacementEdit>>, CallError> {
        self.counted(|| match &self.pre {
            ControllerPre::Placement(pre) => self.call(|store| {
                let instance = pre.instantiate(&mut *store)?;
                instance
                    .wasmco_controller_placement()
                    .call_place(&mut *store, request)
            }),
            ControllerPre::PlacementV0_1(pre) => self.call(|store| {
                let instance = pre.instantiate(&mut *store)?;
                let answer = instance
                    .wasmco_controller_placement()
                    .call_place(&mut *store, &v0_1::placement_request(request))?;
                Ok(v0_1::placement_answer(answer))
            }),
            ControllerPre::Action(_) | ControllerPre::ActionV0_1(_) => {
                Err(self.failure(CallFailure::WrongKind {
                    called: ControllerKind::Placement,
                }))
            }
        })
    }

    /// Calls an action controller in a fresh instance.
    pub fn act(&self, request: &ActionRequest) -> Result<CallOutput<Vec<ActionEdit>>, CallError> {
        self.counted(|| match &self.pre {
            ControllerPre::Action(pre) => self.call(|store| {
                let instance = pre.instantiate(&mut *store)?;
                instance
                    .wasmco_controller_action()
                    .call_act(&mut *store, request)
            }),
            ControllerPre::ActionV0_1(pre) => self.call(|store| {
                let instance = pre.instantiate(&mut *store)?;
                let answer = instance
                    .wasmco_controller_action()
                    .call_act(&mut *store, &v0_1::action_request(request))?;
                Ok(v0_1::action_answer(answer))
            }),
            ControllerPre::Placement(_) | ControllerPre::PlacementV0_1(_) => {
                Err(self.failure(CallFailure::WrongKind {
                    called: ControllerKind::Action,
                }))
            }
        })
    }

    /// Records that the edits this controller's call returned were refused.
    pub fn record_invalid_edit(&self) {
        self.runtime.inner.metrics.invalid_edit(&self.name);
    }

    /// Makes the call, recording how long it took and how it ended.
    fn counted<T>(
        &self,
        call: impl FnOnce() -> Result<CallOutput<T>, CallError>,
    ) -> Result<CallOutput<T>, CallError> {
        let started = std::time::Instant::now();
        let result = call();
        let failure = result.as_ref().err().map(|error| &error.failure);
        self.runtime
            .inner
            .metrics
            .record(&self.name, started.elapsed().as_secs_f64(), failure);
        result
    }

    /// Runs `body` in a fresh sandboxed store and turns every way it can fail
    /// into a [`CallError`] naming this controller.
    fn call<T>(
        &self,
        body: impl FnOnce(
            &mut wasmtime::Store<Sandbox>,
        ) -> wasmtime::Result<Result<T, crate::contract::ControllerError>>,
    ) -> Result<CallOutput<T>, CallError> {
        let inner = &self.runtime.inner;
        let mut store = sandbox::store(inner.engine.engine(), &self.limits);
        store.set_epoch_deadline(inner.engine.deadline_ticks(self.limits.deadline()));
        let outcome = body(&mut store);
        let sandbox = store.into_data();
        let log = sandbox.log.take();
        let failure = match outcome {
            Ok(Ok(value)) => {
                return Ok(CallOutput {
                    value,
                    log,
                    memory_bytes: sandbox.limiter.memory_used(),
                });
            }
            Ok(Err(refusal)) => CallFailure::Refused {
                message: wasmco_core::limits::bounded(refusal.message),
            },
            Err(error) => error::classify(&error, &sandbox.limiter, &self.limits, &log),
        };
        tracing::debug!(controller = %self.name, %failure, "controller call failed");
        Err(CallError {
            controller: self.name.clone(),
            failure,
            log,
        })
    }

    fn failure(&self, failure: CallFailure) -> CallError {
        CallError {
            controller: self.name.clone(),
            failure,
            log: ControllerLog::default(),
        }
    }
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("kind", &self.kind())
            .field("digest", &self.digest)
            .field("limits", &self.limits)
            .finish()
    }
}
