//! What a controller can reach: the WASI interfaces guest languages import
//! (Rust's std, and the Python and JavaScript runtimes), each backed by
//! nothing the controller could learn from or act on: no environment or
//! arguments, a closed stdin, stdout and stderr into the call's log; no
//! preopened directory, so no file to open; every socket and name lookup
//! refused; a wall clock that reads the Unix epoch, a monotonic clock that
//! stands still and random bytes from a fixed seed, so that a call's answer
//! depends on its request alone. Any other import is refused when the
//! controller is registered.

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sockets, sync};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::error::RegistrationError;
use crate::limits::{CallLimiter, ControllerLimits};
use crate::log::LogSink;

/// Interfaces a controller may import, by name without version. Any other
/// (http, key-value, …) is refused at registration.
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
    // Imported by the Python and JavaScript runtimes whether or not the
    // controller's code uses them; each answers as described above.
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
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
    clocks::wall_clock::add_to_linker::<Sandbox, WasiClocks>(l, Sandbox::clocks)?;
    clocks::monotonic_clock::add_to_linker::<Sandbox, WasiClocks>(l, Sandbox::clocks)?;
    random::random::add_to_linker::<Sandbox, WasiRandom>(l, |s| s.wasi.random())?;
    random::insecure::add_to_linker::<Sandbox, WasiRandom>(l, |s| s.wasi.random())?;
    random::insecure_seed::add_to_linker::<Sandbox, WasiRandom>(l, |s| s.wasi.random())?;
    sync::filesystem::types::add_to_linker::<Sandbox, WasiFilesystem>(l, Sandbox::filesystem)?;
    filesystem::preopens::add_to_linker::<Sandbox, WasiFilesystem>(l, Sandbox::filesystem)?;
    sockets::network::add_to_linker::<Sandbox, WasiSockets>(
        l,
        &Default::default(),
        Sandbox::sockets,
    )?;
    sockets::instance_network::add_to_linker::<Sandbox, WasiSockets>(l, Sandbox::sockets)?;
    sync::sockets::tcp::add_to_linker::<Sandbox, WasiSockets>(l, Sandbox::sockets)?;
    sockets::tcp_create_socket::add_to_linker::<Sandbox, WasiSockets>(l, Sandbox::sockets)?;
    sync::sockets::udp::add_to_linker::<Sandbox, WasiSockets>(l, Sandbox::sockets)?;
    sync::sockets::udp_create_socket::add_to_linker::<Sandbox, WasiSockets>(l, Sandbox::sockets)?;
    sockets::ip_name_lookup::add_to_linker::<Sandbox, WasiSockets>(l, Sandbox::sockets)?;
    Ok(linker)
}

/// A clock that never moves: the wall clock reads the Unix epoch, the
/// monotonic one zero.
struct Stopped;

impl wasmtime_wasi::HostWallClock for Stopped {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }

    fn now(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for Stopped {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        0
    }
}

/// The bytes every call's random streams cycle through: the same for every
/// call, so a controller that draws on them answers the same request the
/// same way.
const RANDOM_CYCLE: [u8; 16] = *b"wasmco-seeded-16";

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
    // No preopened directory and no socket address allowed: the file
    // system and network interfaces are linked with nothing behind them.
    let wasi = WasiCtx::builder()
        .stdout(log.clone())
        .stderr(log.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .wall_clock(Stopped)
        .monotonic_clock(Stopped)
        .secure_random(wasmtime_wasi::Deterministic::new(RANDOM_CYCLE.to_vec()))
        .insecure_random(wasmtime_wasi::Deterministic::new(RANDOM_CYCLE.to_vec()))
        .insecure_random_seed(u128::from_le_bytes(RANDOM_CYCLE))
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
