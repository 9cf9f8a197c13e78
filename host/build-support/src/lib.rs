//! Building wasm32-wasip2 components from a build script: the host's
//! plugins and the tests' guests are built the same way, each into a
//! target directory of its own (the outer cargo holds a lock on its own).

use std::path::{Path, PathBuf};
use std::process::Command;

mod go;

pub use go::{GoWasm, build_go_wasm, build_wasip1, go_source};

/// The target components are built for.
pub const TARGET: &str = "wasm32-wasip2";
/// The cargo profile they are built with (see the workspace's Cargo.toml).
pub const PROFILE: &str = "plugin";

/// Builds `packages` of the workspace at `workspace` as components and
/// answers the directory that holds their `.wasm` files; `label` names the
/// target directory (under cargo's) they are built in. Tells cargo to run
/// the calling build script again when anything in `watched` changes.
pub fn build_components(
    workspace: &Path,
    packages: &[&str],
    label: &str,
    watched: &[&str],
) -> PathBuf {
    // The components' compiler flags live in the workspace's cargo config.
    for path in watched.iter().chain(&[".cargo/config.toml"]) {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    // Cargo fingerprints a workspace member by its path relative to the
    // workspace, so two checkouts sharing a CARGO_TARGET_DIR share a build
    // script's last run, and with it the other checkout's watched paths and
    // output directory. The directory cargo runs in tells them apart.
    println!("cargo:rerun-if-env-changed=PWD");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    ensure_target(&cargo);

    // One directory per checkout, so clones sharing a CARGO_TARGET_DIR do
    // not overwrite each other's components.
    let checkout = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        workspace.hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    };
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join(label)
        .join(checkout);
    let mut build = Command::new(&cargo);
    build
        .current_dir(workspace)
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
    for package in packages {
        build.args(["-p", package]);
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
        .unwrap_or_else(|e| panic!("cannot run cargo to build the components: {e}"));
    if !status.success() {
        panic!("building the components for {TARGET} failed (see the errors above)");
    }
    let out = target_dir.join(TARGET).join(PROFILE);
    for package in packages {
        let file = out.join(format!("{}.wasm", package.replace('-', "_")));
        assert!(file.exists(), "{} was not built", file.display());
    }
    out
}

/// Adds the wasm32-wasip2 target through rustup when the toolchain lacks it,
/// so a fresh machine (with RUSTUP_AUTO_INSTALL=0) still builds.
pub fn ensure_target(cargo: &std::ffi::OsStr) {
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
