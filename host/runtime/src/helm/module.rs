//! The renderer's module: embedded gzipped in this binary, and compiled
//! once per machine into a cache every data directory shares.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use wasmtime::{Engine, Module};

use super::error::HelmError;
use crate::compiled_file::{self, KeepError};
use crate::error::describe;

/// The renderer this build embeds: its gzipped module and the digest of
/// what it was built from.
#[derive(Clone, Copy)]
pub(super) struct Embedded {
    gzipped: &'static [u8],
    digest: &'static str,
}

#[cfg(helm_renderer)]
pub(super) const EMBEDDED: Option<Embedded> = Some(Embedded {
    gzipped: include_bytes!(env!("WASMCO_HELM_RENDERER")),
    digest: env!("WASMCO_HELM_RENDERER_DIGEST"),
});
#[cfg(not(helm_renderer))]
pub(super) const EMBEDDED: Option<Embedded> = None;

/// The renderer's module for this engine: loaded from the cache in `dir`,
/// or compiled and cached there.
pub(super) fn load_or_compile(
    engine: &Engine,
    embedded: &Embedded,
    dir: &Path,
) -> Result<Module, HelmError> {
    create_private_dir(dir).map_err(|e| {
        HelmError::Broken(format!("cannot use the cache at {}: {e}", dir.display()))
    })?;
    let name = cache_name(engine, embedded);
    let path = dir.join(&name);
    // One compile per machine: other servers starting at the same time
    // wait here and then load what the first one wrote.
    let lock = File::create(dir.join("helm-renderer.lock"))
        .and_then(|file| file.lock().map(|()| file))
        .map_err(|e| HelmError::Broken(format!("cannot lock the renderer cache: {e}")))?;
    if path.exists() {
        match load(engine, &path) {
            Ok(module) => return Ok(module),
            Err(error) => tracing::warn!(
                path = %path.display(),
                error = %describe(&error),
                "cached Helm renderer unusable; compiling again"
            ),
        }
    }
    tracing::info!("compiling the Helm renderer (once per machine; about a minute)");
    let started = Instant::now();
    let mut wasm = Vec::new();
    flate2::read::GzDecoder::new(embedded.gzipped)
        .read_to_end(&mut wasm)
        .map_err(|e| HelmError::Broken(format!("the embedded renderer is corrupt: {e}")))?;
    let module = Module::new(engine, &wasm).map_err(|e| HelmError::Broken(describe(&e)))?;
    tracing::info!(took = ?started.elapsed(), "Helm renderer compiled");
    if let Err(error) = store(dir, &path, &module) {
        tracing::warn!(path = %path.display(), error = &error as &dyn std::error::Error, "could not cache the compiled Helm renderer");
    }
    prune(dir, &name);
    drop(lock);
    Ok(module)
}

/// The cached module's file name: which renderer, compiled for which
/// engine configuration.
fn cache_name(engine: &Engine, embedded: &Embedded) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!(
        "helm-renderer-{}-{:016x}.cwasm",
        &embedded.digest[..16],
        hasher.finish()
    )
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Loads the renderer this module compiled.
#[allow(unsafe_code)]
fn load(engine: &Engine, path: &Path) -> wasmtime::Result<Module> {
    // SAFETY: wasmtime trusts a serialized module to hold valid machine
    // code. Files named helm-renderer-*.cwasm in this directory (the
    // user's own, made 0700) are written only by `store` below, from
    // `Module::serialize` of an engine with this configuration (its key is
    // in the name), and renamed into place whole; `deserialize_file`
    // checks the header's version and settings.
    unsafe { Module::deserialize_file(engine, path) }
}

fn store(dir: &Path, path: &Path, module: &Module) -> Result<(), KeepError> {
    let bytes = module
        .serialize()
        .map_err(|e| KeepError::Serialise(describe(&e)))?;
    compiled_file::keep(dir, path, &bytes)
}

/// Removes other builds of the renderer (160 MB each) from the cache.
fn prune(dir: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("helm-renderer-") && name.ends_with(".cwasm") && name != keep {
            let path: PathBuf = entry.path();
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::debug!(path = %path.display(), %error, "could not prune an old renderer");
            }
        }
    }
}
