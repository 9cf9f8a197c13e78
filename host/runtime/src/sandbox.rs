//! What a controller can reach: the few WASI interfaces any Rust std guest
//! imports, backed by nothing (no environment, no arguments, closed stdin) or
//! by the call's log (stdout, stderr). Everything else is refused when the
//! controller is registered.

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::p2::bindings::{cli, sync};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::RegistrationError;
use super::limits::{CallLimiter, ControllerLimits};
use super::log::LogSink;

/// Interfaces a controller may import, by name without version. Any other
/// import (file system, sockets, clocks, random, http, …) is refused.
const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    // Only types, shared by the two worlds; nothing to call.
    "wasmco:controller/types",
];

/// The store data of one call.
pub(super) struct Sandbox {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: CallLimiter,
    pub log: LogSink,
}

impl WasiView for Sandbox {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The linker every controller is instantiated with.
pub(super) fn linker(engine: &Engine) -> wasmtime::Result<Linker<Sandbox>> {
    let mut linker = Linker::new(engine);
    let l = &mut linker;
    cli::exit::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::environment::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::stdin::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::stdout::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::stderr::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::terminal_input::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::terminal_output::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::terminal_stdin::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::terminal_stdout::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    cli::terminal_stderr::add_to_linker::<Sandbox, WasiCli>(l, Sandbox::cli)?;
    sync::io::error::add_to_linker::<Sandbox, HasTable>(l, |s| &mut s.table)?;
    sync::io::poll::add_to_linker::<Sandbox, HasTable>(l, |s| &mut s.table)?;
    sync::io::streams::add_to_linker::<Sandbox, HasTable>(l, |s| &mut s.table)?;
    Ok(linker)
}

struct HasTable;

impl wasmtime::component::HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}

/// Whether a component may import `name` (any version of an interface in
/// [`ALLOWED_IMPORTS`]).
pub(super) fn allowed_import(name: &str) -> bool {
    let unversioned = name.split('@').next().unwrap_or(name);
    ALLOWED_IMPORTS.contains(&unversioned)
}

/// Refuses a component that imports anything outside [`ALLOWED_IMPORTS`].
pub(super) fn check_imports(
    engine: &Engine,
    component: &Component,
) -> Result<(), RegistrationError> {
    let forbidden: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .filter(|name| !allowed_import(name))
        .collect();
    if forbidden.is_empty() {
        Ok(())
    } else {
        Err(RegistrationError::ForbiddenImports(forbidden))
    }
}

/// A fresh store for one call under `limits`.
pub(super) fn store(engine: &Engine, limits: &ControllerLimits) -> Store<Sandbox> {
    let log = LogSink::new(limits.log_bytes as usize);
    let wasi = WasiCtx::builder()
        .stdout(log.clone())
        .stderr(log.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build();
    let mut store = Store::new(
        engine,
        Sandbox {
            wasi,
            table: ResourceTable::new(),
            limiter: CallLimiter::new(limits),
            log,
        },
    );
    store.limiter(|sandbox| &mut sandbox.limiter);
    store.epoch_deadline_trap();
    store
}
