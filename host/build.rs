//! Builds the controllers in `plugins/` (and the test guests in
//! `tests/guests/`) as wasm32-wasip2 components, so `cargo build` and
//! `cargo test` need no manual step. The host embeds the plugins; tests load
//! the guests from the directory this script exports as `WASMCO_GUEST_DIR`.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "plugin";
const GUESTS: &[&str] = &[
    "generic-placement",
    "gac",
    "capacity-placement",
    "guest-hostile",
    "guest-fs-import",
    "guest-socket-import",
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .expect("host/ lives in the workspace")
        .to_owned();
    for watched in ["wit", "sdk", "plugins", "tests/guests", "Cargo.lock"] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    // Cargo fingerprints a workspace member by its path relative to the
    // workspace, so two checkouts sharing a CARGO_TARGET_DIR share this
    // script's last run, and with it the other checkout's watched paths and
    // guest directory. The directory cargo runs in tells them apart.
    println!("cargo:rerun-if-env-changed=PWD");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    ensure_target(&cargo);

    // A separate target dir: the outer cargo holds a lock on its own. One per
    // checkout, so clones sharing a CARGO_TARGET_DIR do not overwrite each
    // other's components.
    let checkout = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        workspace.hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    };
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join("wasm-guests")
        .join(checkout);
    let mut build = Command::new(&cargo);
    build
        .current_dir(&workspace)
        .args([
            "build",
            "--locked",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    for guest in GUESTS {
        build.args(["-p", guest]);
    }
    // Flags and wrappers meant for the host build must not reach the guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        build.env_remove(var);
    }
    let status = build
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the controllers: {e}"));
    if !status.success() {
        panic!("building the controllers for {TARGET} failed (see the errors above)");
    }
    let out = target_dir.join(TARGET).join(PROFILE);
    for guest in GUESTS {
        let file = out.join(format!("{}.wasm", guest.replace('-', "_")));
        assert!(file.exists(), "{} was not built", file.display());
    }
    println!("cargo:rustc-env=WASMCO_GUEST_DIR={}", out.display());
}

/// Adds the wasm32-wasip2 target through rustup when the toolchain lacks it,
/// so a fresh machine (with RUSTUP_AUTO_INSTALL=0) still builds.
fn ensure_target(cargo: &std::ffi::OsStr) {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if libdir.as_deref().is_some_and(Path::exists) {
        return;
    }
    println!("cargo:warning=the {TARGET} target is missing; adding it with rustup");
    let toolchain = Path::new(cargo)
        .ancestors()
        .find_map(|dir| {
            dir.file_name()
                .filter(|_| dir.parent().is_some_and(|p| p.ends_with("toolchains")))
        })
        .map(|name| name.to_string_lossy().into_owned());
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", TARGET]);
    if let Some(toolchain) = toolchain {
        rustup.args(["--toolchain", &toolchain]);
    }
    let added = rustup.status().map(|s| s.success()).unwrap_or(false);
    if !added {
        panic!(
            "the {TARGET} target is missing and `rustup target add {TARGET}` failed; add it by hand"
        );
    }
}
