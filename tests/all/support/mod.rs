//! What the tests share: one runtime per test process (as in production),
//! the guests built by `host/runtime/build.rs`, `wasmco serve` and virtual
//! clusters to talk to ([`server`]), scenarios on either kind of cluster
//! ([`clusters`]), and one way to wait for what a test observes ([`wait`]).

pub mod clusters;
pub mod server;
pub mod wait;

use std::path::PathBuf;
use std::sync::OnceLock;

use wasmco_core::ClusterInfo;
use wasmco_runtime::{Controller, ControllerKind, LimitOverrides, Runtime, RuntimeConfig};

pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let cache = std::env::temp_dir().join(format!("wasmco-test-cache-{}", std::process::id()));
        Runtime::new(RuntimeConfig::new(cache)).expect("runtime starts")
    })
}

/// The Helm renderer, compiled into the machine's cache before any server
/// starts, so that servers only load it (one compile per machine, not one
/// interrupted compile per short-lived test server).
pub fn helm_renderer() -> &'static wasmco_runtime::helm::HelmRenderer {
    static RENDERER: OnceLock<wasmco_runtime::helm::HelmRenderer> = OnceLock::new();
    RENDERER.get_or_init(|| {
        let renderer = wasmco_runtime::helm::HelmRenderer::new(Default::default());
        renderer.prepare().expect("the Helm renderer compiles");
        renderer
    })
}

pub fn guest_path(file: &str) -> PathBuf {
    // The test guests come from the test-only crate; the shipped
    // controllers from the host's own build.
    let dir = if file.starts_with("guest_") {
        wasmco_test_guests::DIR
    } else {
        wasmco_runtime::builtin::PLUGIN_DIR
    };
    PathBuf::from(dir).join(file)
}

pub fn guest(file: &str) -> Vec<u8> {
    std::fs::read(guest_path(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

pub fn load(name: &str, kind: ControllerKind, file: &str) -> Controller {
    load_with(name, kind, file, &LimitOverrides::default())
}

pub fn load_with(
    name: &str,
    kind: ControllerKind,
    file: &str,
    limits: &LimitOverrides,
) -> Controller {
    runtime()
        .load(name, kind, &guest(file), limits)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn cluster(provider: &str, name: &str, labels: &[&str], kv: &[(&str, &str)]) -> ClusterInfo {
    ClusterInfo {
        provider: provider.into(),
        name: name.into(),
        labels: labels.iter().map(|l| l.to_string()).collect(),
        kv: kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// A component importing `interface` (an instance with nothing in it) and
/// exporting nothing: refused for its import before anything else is read.
pub fn importing(interface: &str) -> Vec<u8> {
    wat::parse_str(format!("(component (import \"{interface}\" (instance)))"))
        .expect("a component in the text format")
}
