//! Building a Go program for `GOOS=wasip1 GOARCH=wasm` (the Helm
//! renderer), when the machine has Go: from a build script that embeds it,
//! or from the host the first time it needs it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// Wasm features Go may use beyond the MVP: wasmtime has both, and they
/// make Go's code smaller and faster.
const GOWASM: &str = "satconv,signext";

/// A Go program built for wasip1, gzipped for embedding.
pub struct GoWasm {
    /// The `.wasm.gz` file.
    pub path: PathBuf,
    /// sha256 of the inputs (sources, go.mod, go.sum, Go's version): names
    /// this build wherever it is cached.
    pub digest: String,
}

/// Builds the Go module in `dir` (its `go.mod`, `go.sum` and `*.go` files)
/// as a wasip1 reactor (`-buildmode=c-shared`), unless this very build is
/// cached under the target directory. `None` when the machine has no Go,
/// or when `disable_var` is set; panics when Go is there and the build
/// fails, so a broken renderer is never silently left out.
pub fn build_go_wasm(dir: &Path, name: &str, disable_var: &str) -> Option<GoWasm> {
    let digest = go_source(dir, name, disable_var)?;
    let out_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target"))
        .join("go-wasm")
        .join(name);
    let path = out_dir.join(format!("{}.wasm.gz", &digest[..16]));
    if path.exists() {
        return Some(GoWasm { path, digest });
    }
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_dir.display()));
    let raw = out_dir.join(format!("{}.wasm", &digest[..16]));
    println!(
        "cargo:warning=building {name} with Go (once per change; Go fetches its modules the first time)"
    );
    if let Err(error) = build_wasip1(dir, &raw) {
        panic!("{error}; set {disable_var}=1 to build without {name}");
    }
    let wasm = std::fs::read(&raw).unwrap_or_else(|e| panic!("{name} was not built: {e}"));
    let _ = std::fs::remove_file(&raw);
    let partial = out_dir.join(format!("{}.gz.partial", &digest[..16]));
    std::fs::write(&partial, gzip(&wasm))
        .and_then(|()| std::fs::rename(&partial, &path))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    remove_all_but(&out_dir, &path);
    Some(GoWasm { path, digest })
}

/// For a build script whose crate builds the Go module in `dir` later, at
/// run time ([`build_wasip1`]): the digest naming that build, after
/// telling cargo what it depends on. `None` when the machine has no Go or
/// `disable_var` is set.
pub fn go_source(dir: &Path, name: &str, disable_var: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={disable_var}");
    println!("cargo:rerun-if-env-changed=GOFLAGS");
    println!("cargo:rerun-if-changed={}", dir.display());
    if std::env::var_os(disable_var).is_some_and(|v| v != "0" && !v.is_empty()) {
        println!("cargo:warning={disable_var} is set: {name} is left out of this build");
        return None;
    }
    let Some(version) = go_version() else {
        println!("cargo:warning=Go is not installed: {name} is left out of this build");
        return None;
    };
    Some(inputs_digest(dir, &version))
}

/// Builds the Go module in `dir` as a wasip1 reactor
/// (`-buildmode=c-shared`) at `out`, which appears whole or not at all.
/// On failure, answers what went wrong with Go's own messages.
pub fn build_wasip1(dir: &Path, out: &Path) -> Result<(), String> {
    let partial = out.with_extension("partial");
    let output = go_build(dir, &partial)
        .output()
        .map_err(|e| format!("cannot run go to build {}: {e}", dir.display()))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(format!(
            "building {} with Go failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    std::fs::rename(&partial, out).map_err(|e| format!("cannot write {}: {e}", out.display()))
}

/// The sha256 of what a build depends on: Go's version, the wasm features
/// and the module's sources.
fn inputs_digest(dir: &Path, version: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(version.as_bytes());
    hasher.update(GOWASM.as_bytes());
    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            let file = path
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or_default();
            file == "go.mod" || file == "go.sum" || file.ends_with(".go")
        })
        .collect();
    sources.sort();
    for source in &sources {
        hasher.update(source.file_name().unwrap_or_default().as_encoded_bytes());
        hasher.update(std::fs::read(source).unwrap_or_default());
    }
    hex::encode(hasher.finalize())
}

/// The `go build` that makes the module in `dir` a wasip1 reactor at `out`.
fn go_build(dir: &Path, out: &Path) -> Command {
    let mut build = Command::new("go");
    build
        .current_dir(dir)
        .args([
            "build",
            "-buildmode=c-shared",
            "-trimpath",
            "-ldflags=-s -w",
            "-o",
        ])
        .arg(out)
        .arg(".")
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        .env("GOWASM", GOWASM)
        .env("CGO_ENABLED", "0")
        // The Go on the machine builds it; never a toolchain download.
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=readonly");
    // Go's caches outside the clone, shared with the tests' Go builds.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for (var, sub) in [("GOMODCACHE", "go-mod"), ("GOCACHE", "go-build")] {
        if std::env::var_os(var).is_none()
            && let Some(home) = &home
        {
            build.env(var, home.join(".cache").join(sub));
        }
    }
    build
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(bytes).expect("compressing in memory");
    gz.finish().expect("compressing in memory")
}

/// Removes earlier builds from `dir`: they are never used again (tens of
/// MB each).
fn remove_all_but(dir: &Path, keep: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.path() != keep {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

fn go_version() -> Option<String> {
    let output = Command::new("go")
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
