//! How the runtime fails: at start, at registration, and per call.

use std::path::PathBuf;

use wasmco_core::controllers::ControllerKind;

use crate::log::ControllerLog;

/// The runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// wasmtime refused the engine configuration.
    #[error("cannot create the wasm engine: {0}")]
    Engine(String),
    /// The WASI interfaces could not be linked.
    #[error("cannot link the sandbox's WASI interfaces: {0}")]
    Linker(#[source] wasmtime::Error),
    /// The deadline ticker thread could not start.
    #[error("cannot start the deadline ticker: {0}")]
    Ticker(#[source] std::io::Error),
    /// The compile cache directory is unusable.
    #[error("cannot use the controller cache at {path}: {source}")]
    Cache {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A component was refused at registration.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// The bytes are not WebAssembly at all.
    #[error("the file is not a WebAssembly component (no wasm header)")]
    NotWasm,
    /// A core module, not a component.
    #[error(
        "the file is a core WebAssembly module, not a component; build for wasm32-wasip2 or run `wasm-tools component new`"
    )]
    CoreModule,
    /// wasmtime could not compile it.
    #[error("the component does not compile: {0}")]
    Compile(String),
    /// Its code is shaped to make compiling it take too long.
    #[error("{0}")]
    Code(String),
    /// It imports interfaces the sandbox does not grant.
    #[error("the component imports {}, which controllers may not use (allowed: wasi:cli, wasi:io, and wasi:clocks, wasi:random, wasi:filesystem and wasi:sockets, which give a controller nothing: no files, no network, a stopped clock, seeded random)", .0.join(", "))]
    ForbiddenImports(Vec<String>),
    /// It does not implement the world its kind names.
    #[error(
        "registered as a {kind} controller, the component must export {expected}, but it exports {found}"
    )]
    WrongWorld {
        /// The kind it was registered as.
        kind: ControllerKind,
        /// The interface that kind needs.
        expected: String,
        /// What it exports instead.
        found: String,
    },
    /// It exports the interface, but with other types or functions.
    #[error("the component does not match the contract: {0}")]
    WorldMismatch(String),
    /// Its imports could not be resolved.
    #[error("the component cannot be linked: {0}")]
    Link(String),
    /// It cannot start within its limits.
    #[error("the component cannot be instantiated: {0}")]
    Instantiate(String),
    /// The limits asked for are not allowed.
    #[error("limits.{field}: {reason}")]
    Limit {
        /// The limit's name as it appears in the registration.
        field: String,
        /// Why it is refused.
        reason: String,
    },
}

/// A call failed; names the controller, says why, and keeps what it printed.
#[derive(Debug, thiserror::Error)]
#[error("controller {controller}: {failure}")]
pub struct CallError {
    /// The controller's registered name.
    pub controller: String,
    /// What went wrong.
    pub failure: CallFailure,
    /// What the controller printed before it failed.
    pub log: ControllerLog,
}

/// The ways one call can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    /// It ran past its deadline and was stopped.
    #[error("did not finish within its deadline of {deadline_ms} ms")]
    DeadlineExceeded {
        /// The deadline it had.
        deadline_ms: u64,
    },
    /// It asked for more memory than its cap.
    #[error("exceeded its memory limit of {limit} bytes (asked for {requested})")]
    MemoryLimit {
        /// The cap.
        limit: u64,
        /// The size it tried to grow to.
        requested: u64,
    },
    /// It trapped (a panic, an unreachable, a bad memory access).
    #[error("trapped: {message}")]
    Trap {
        /// The guest's panic message when it printed one, else the trap.
        message: String,
    },
    /// It answered with an error of its own.
    #[error("{message}")]
    Refused {
        /// The controller's message.
        message: String,
    },
    /// It returned edits the host refused; none were applied.
    #[error("returned an invalid edit: {reason}")]
    InvalidEdit {
        /// Which edit and why.
        reason: String,
    },
    /// It was called through the other kind's entry point.
    #[error("is not a {called} controller")]
    WrongKind {
        /// The kind of call that was made.
        called: ControllerKind,
    },
}

/// An error with its causes on one line.
pub(crate) fn describe(error: &wasmtime::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        text.push_str(": ");
        text.push_str(&cause.to_string());
    }
    text
}
