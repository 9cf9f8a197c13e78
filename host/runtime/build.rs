//! Builds the controllers in `plugins/` as wasm32-wasip2 components, so
//! `cargo build` needs no manual step; the host embeds them from the
//! directory this script exports as `WASMCO_PLUGIN_DIR`. The tests' own
//! guests are built by the test-only crate in `tests/guests/build`.

fn main() {
    let manifest_dir =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .ancestors()
        .nth(2)
        .expect("host/runtime lives in the workspace");
    let out = wasmco_build::build_components(
        workspace,
        &["generic-placement", "gac", "capacity-placement"],
        "wasm-plugins",
        &["wit", "sdk", "plugins", "Cargo.lock"],
    );
    println!("cargo:rustc-env=WASMCO_PLUGIN_DIR={}", out.display());
}
