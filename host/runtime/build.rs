//! Builds the controllers in `plugins/` as wasm32-wasip2 components, so
//! `cargo build` needs no manual step; the host embeds them from the
//! directory this script exports as `WASMCO_PLUGIN_DIR`. The tests' own
//! guests are built by the test-only crate in `tests/guests/build`.
//!
//! When the machine has Go, it also builds the Helm renderer
//! (`plugins/helm-renderer`, Helm's engine for wasip1) and exports it as
//! `WASMCO_HELM_RENDERER`, with the `helm_renderer` cfg set; without Go
//! the host is built without Helm support and refuses charts.

fn main() {
    let manifest_dir =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .ancestors()
        .nth(2)
        .expect("host/runtime lives in the workspace");
    let out = wasmco_build::build_components(
        workspace,
        &[
            "generic-placement",
            "gac",
            "capacity-placement",
            "ovnaction",
            "dtc",
            "hpa-placement",
            "hpa-action",
            "sfc",
            "sfcclient",
        ],
        "wasm-plugins",
        &["wit", "sdk", "plugins", "Cargo.lock"],
    );
    println!("cargo:rustc-env=WASMCO_PLUGIN_DIR={}", out.display());

    println!("cargo::rustc-check-cfg=cfg(helm_renderer)");
    let renderer = wasmco_build::build_go_wasm(
        &workspace.join("plugins/helm-renderer"),
        "helm-renderer",
        "WASMCO_NO_HELM",
    );
    if let Some(renderer) = renderer {
        println!("cargo:rustc-cfg=helm_renderer");
        println!(
            "cargo:rustc-env=WASMCO_HELM_RENDERER={}",
            renderer.path.display()
        );
        println!(
            "cargo:rustc-env=WASMCO_HELM_RENDERER_DIGEST={}",
            renderer.digest
        );
    }
}
