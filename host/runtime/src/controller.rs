//! A loaded controller: which contract it speaks, and calling it under its
//! limits.

use std::sync::Arc;

use wasmtime::component::{Component, InstancePre};

use wasmco_core::controllers::ControllerKind;

use crate::contract::{
    ActionControllerPre, ActionEdit, ActionRequest, ContractVersion, GateControllerPre,
    GateRequest, PlacementControllerPre, PlacementEdit, PlacementRequest, Verdict, export_names,
    v0_1,
};
use crate::engine::SandboxEngine;
use crate::error::{self, CallError, CallFailure, RegistrationError};
use crate::limits::{CallLimiter, ControllerLimits};
use crate::log::ControllerLog;
use crate::metrics::ControllerMetrics;
use crate::sandbox::{self, Sandbox};

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
                    for kind in [
                        ControllerKind::Placement,
                        ControllerKind::Action,
                        ControllerKind::Gate,
                    ] {
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

/// The contract version whose `kind` interface the component exports;
/// refuses one that exports none, naming what it exports instead.
pub(crate) fn check_world(
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

pub(crate) enum ControllerPre {
    Placement(PlacementControllerPre<Sandbox>),
    Action(ActionControllerPre<Sandbox>),
    PlacementV0_1(v0_1::PlacementControllerPre<Sandbox>),
    ActionV0_1(v0_1::ActionControllerPre<Sandbox>),
    Gate(GateControllerPre<Sandbox>),
}

impl ControllerPre {
    /// The pre-instantiated component, typed by the contract `version` of
    /// `kind` it exports.
    pub(crate) fn new(
        instance_pre: InstancePre<Sandbox>,
        kind: ControllerKind,
        version: ContractVersion,
    ) -> Result<Self, RegistrationError> {
        let mismatch = |e: wasmtime::Error| RegistrationError::WorldMismatch(error::describe(&e));
        Ok(match (kind, version) {
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
            (ControllerKind::Gate, ContractVersion::V0_2) => {
                ControllerPre::Gate(GateControllerPre::new(instance_pre).map_err(mismatch)?)
            }
            (ControllerKind::Gate, ContractVersion::V0_1) => {
                return Err(RegistrationError::WorldMismatch(
                    "gate controllers came with contract 0.2.0; build against it".into(),
                ));
            }
        })
    }
}

/// A registered controller, ready to be called.
pub struct Controller {
    pub(crate) name: String,
    pub(crate) digest: String,
    pub(crate) size: usize,
    pub(crate) limits: ControllerLimits,
    pub(crate) pre: ControllerPre,
    /// The runtime's engine, whose deadline clock every call runs under.
    pub(crate) engine: Arc<SandboxEngine>,
    /// The runtime's metrics (a handle on them), where calls are counted.
    pub(crate) metrics: ControllerMetrics,
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
            ControllerPre::Gate(_) => ControllerKind::Gate,
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
            ControllerPre::Placement(_) | ControllerPre::Action(_) | ControllerPre::Gate(_) => {
                ContractVersion::V0_2
            }
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
                ControllerPre::Gate(pre) => {
                    pre.instantiate(&mut *store)?;
                }
            }
            Ok(Ok(()))
        });
        self.metrics
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
            ControllerPre::Action(_) | ControllerPre::ActionV0_1(_) | ControllerPre::Gate(_) => {
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
            ControllerPre::Placement(_)
            | ControllerPre::PlacementV0_1(_)
            | ControllerPre::Gate(_) => Err(self.failure(CallFailure::WrongKind {
                called: ControllerKind::Action,
            })),
        })
    }

    /// Calls a gate controller in a fresh instance.
    pub fn check(&self, request: &GateRequest) -> Result<CallOutput<Verdict>, CallError> {
        self.counted(|| match &self.pre {
            ControllerPre::Gate(pre) => self.call(|store| {
                let instance = pre.instantiate(&mut *store)?;
                instance
                    .wasmco_controller_gate()
                    .call_check(&mut *store, request)
            }),
            _ => Err(self.failure(CallFailure::WrongKind {
                called: ControllerKind::Gate,
            })),
        })
    }

    /// Records that the edits this controller's call returned were refused.
    pub fn record_invalid_edit(&self) {
        self.metrics.invalid_edit(&self.name);
    }

    /// Makes the call, recording how long it took and how it ended.
    fn counted<T>(
        &self,
        call: impl FnOnce() -> Result<CallOutput<T>, CallError>,
    ) -> Result<CallOutput<T>, CallError> {
        let started = std::time::Instant::now();
        let result = call();
        let failure = result.as_ref().err().map(|error| &error.failure);
        self.metrics
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
        let mut store = sandbox::store(self.engine.engine(), &self.limits);
        store.set_epoch_deadline(self.engine.deadline_ticks(self.limits.deadline()));
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
            Err(error) => classify(&error, &sandbox.limiter, &self.limits, &log),
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

/// Turns a failed call into what it means for the user.
fn classify(
    error: &wasmtime::Error,
    limiter: &CallLimiter,
    limits: &ControllerLimits,
    log: &ControllerLog,
) -> CallFailure {
    if let Some(requested) = limiter.refused_memory {
        return CallFailure::MemoryLimit {
            limit: limits.memory_bytes,
            requested: requested as u64,
        };
    }
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => CallFailure::DeadlineExceeded {
            deadline_ms: limits.deadline_ms,
        },
        Some(trap) => CallFailure::Trap {
            message: log.panic_message().unwrap_or_else(|| trap.to_string()),
        },
        None => CallFailure::Trap {
            message: log
                .panic_message()
                .unwrap_or_else(|| error::describe(error)),
        },
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
