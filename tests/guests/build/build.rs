//! Builds the test guests in `tests/guests/` as wasm32-wasip2 components.

fn main() {
    let manifest_dir =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .ancestors()
        .nth(3)
        .expect("tests/guests/build lives in the workspace");
    let out = wasmco_build::build_components(
        workspace,
        &[
            "guest-hostile",
            "guest-gate",
            "guest-rank",
            "guest-fs-import",
            "guest-socket-import",
            "guest-contract-0-1",
        ],
        "wasm-test-guests",
        &[
            "wit",
            "host/runtime/wit",
            "sdk",
            "tests/guests",
            "Cargo.lock",
        ],
    );
    println!("cargo:rustc-env=WASMCO_TEST_GUEST_DIR={}", out.display());
}
