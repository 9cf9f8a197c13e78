//! Builds the controllers in `plugins/` as wasm32-wasip2 components, so
//! `cargo build` needs no manual step; the host embeds them from the
//! directory this script exports as `WASMCO_PLUGIN_DIR`. The tests' own
//! guests are built by the test-only crate in `tests/guests/build`.
//!
//! The Helm renderer (`plugins/helm-renderer`, Helm's engine for wasip1)
//! is Go, and building it is a minute of a first build's CPU. So by
//! default this script only records where its sources are and the digest
//! that names their build (`helm_renderer = "checkout"`), and the host
//! builds it with Go the first time it needs it: a server starts without
//! waiting, and only charts wait. With the `embed-helm-renderer` feature it
//! is built here and embedded (`helm_renderer = "embedded"`), for a binary
//! that runs where there is no Go or checkout. Without Go neither is set,
//! and the host refuses charts.

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

    println!("cargo::rustc-check-cfg=cfg(helm_renderer, values(\"embedded\", \"checkout\"))");
    let source = workspace.join("plugins/helm-renderer");
    const DISABLE: &str = "WASMCO_NO_HELM";
    if std::env::var_os("CARGO_FEATURE_EMBED_HELM_RENDERER").is_some() {
        if let Some(renderer) = wasmco_build::build_go_wasm(&source, "helm-renderer", DISABLE) {
            println!("cargo:rustc-cfg=helm_renderer=\"embedded\"");
            println!(
                "cargo:rustc-env=WASMCO_HELM_RENDERER={}",
                renderer.path.display()
            );
            println!(
                "cargo:rustc-env=WASMCO_HELM_RENDERER_DIGEST={}",
                renderer.digest
            );
        }
    } else if let Some(digest) = wasmco_build::go_source(&source, "helm-renderer", DISABLE) {
        println!("cargo:rustc-cfg=helm_renderer=\"checkout\"");
        println!("cargo:rustc-env=WASMCO_HELM_SOURCE={}", source.display());
        println!("cargo:rustc-env=WASMCO_HELM_RENDERER_DIGEST={digest}");
    }
}
