//! The renderer's module: built from the checkout with Go the first time
//! it is needed (or embedded gzipped in this binary), and compiled once per
//! machine into a cache every data directory shares.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use wasmtime::{Engine, Module};

use super::error::HelmError;
use crate::compiled_file::{self, KeepError};
use crate::error::describe;

/// Where this build gets the renderer's wasm, and the digest of what it is
/// built from (see `host/runtime/build.rs`).
#[derive(Clone, Copy)]
pub(super) enum Source {
    /// Built into this binary, gzipped.
    #[cfg_attr(not(helm_renderer = "embedded"), allow(dead_code))]
    Embedded {
        gzipped: &'static [u8],
        digest: &'static str,
    },
    /// Built with Go from the checkout's `plugins/helm-renderer` into the
    /// cache, once per machine.
    #[cfg_attr(not(helm_renderer = "checkout"), allow(dead_code))]
    Checkout {
        dir: &'static str,
        digest: &'static str,
    },
}

#[cfg(helm_renderer = "embedded")]
pub(super) const SOURCE: Option<Source> = Some(Source::Embedded {
    gzipped: include_bytes!(env!("WASMCO_HELM_RENDERER")),
    digest: env!("WASMCO_HELM_RENDERER_DIGEST"),
});
#[cfg(helm_renderer = "checkout")]
pub(super) const SOURCE: Option<Source> = Some(Source::Checkout {
    dir: env!("WASMCO_HELM_SOURCE"),
    digest: env!("WASMCO_HELM_RENDERER_DIGEST"),
});
#[cfg(not(any(helm_renderer = "embedded", helm_renderer = "checkout")))]
pub(super) const SOURCE: Option<Source> = None;

impl Source {
    /// The file a build from the checkout is kept in.
    fn wasm_name(&self) -> String {
        format!("helm-renderer-{}.wasm", &self.digest()[..16])
    }

    fn digest(&self) -> &'static str {
        match self {
            Source::Embedded { digest, .. } | Source::Checkout { digest, .. } => digest,
        }
    }

    /// The renderer's wasm; from the checkout, built into `dir` first
    /// unless an earlier run did (the caller holds the cache's lock).
    fn wasm(&self, dir: &Path) -> Result<Vec<u8>, HelmError> {
        match self {
            Source::Embedded { gzipped, .. } => {
                let mut wasm = Vec::new();
                flate2::read::GzDecoder::new(*gzipped)
                    .read_to_end(&mut wasm)
                    .map_err(|e| {
                        HelmError::Broken(format!("the embedded renderer is corrupt: {e}"))
                    })?;
                Ok(wasm)
            }
            Source::Checkout { dir: source, .. } => {
                let path = dir.join(self.wasm_name());
                if !path.exists() {
                    tracing::info!(
                        source,
                        "building the Helm renderer with Go (once per machine; a minute or two)"
                    );
                    let started = Instant::now();
                    // Go's messages can run long; the error is shown to users.
                    wasmco_build::build_wasip1(Path::new(source), &path)
                        .map_err(|e| HelmError::Broken(wasmco_core::limits::bounded(e)))?;
                    tracing::info!(took = ?started.elapsed(), "Helm renderer built");
                }
                std::fs::read(&path)
                    .map_err(|e| HelmError::Broken(format!("cannot read {}: {e}", path.display())))
            }
        }
    }
}

/// The renderer's module for this engine: loaded from the cache in `dir`,
/// or compiled and cached there.
pub(super) fn load_or_compile(
    engine: &Engine,
    source: &Source,
    dir: &Path,
) -> Result<Module, HelmError> {
    create_private_dir(dir).map_err(|e| {
        HelmError::Broken(format!("cannot use the cache at {}: {e}", dir.display()))
    })?;
    let name = cache_name(engine, source);
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
    let wasm = source.wasm(dir)?;
    tracing::info!("compiling the Helm renderer (once per machine; about a minute)");
    let started = Instant::now();
    let module = Module::new(engine, &wasm).map_err(|e| {
        // A build that does not compile is not kept: the next try builds again.
        let _ = std::fs::remove_file(dir.join(source.wasm_name()));
        HelmError::Broken(describe(&e))
    })?;
    tracing::info!(took = ?started.elapsed(), "Helm renderer compiled");
    if let Err(error) = store(dir, &path, &module) {
        tracing::warn!(path = %path.display(), error = &error as &dyn std::error::Error, "could not cache the compiled Helm renderer");
    }
    prune(dir, &[&name, &source.wasm_name()]);
    drop(lock);
    Ok(module)
}

/// The cached module's file name: which renderer, compiled for which
/// engine configuration.
fn cache_name(engine: &Engine, source: &Source) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!(
        "helm-renderer-{}-{:016x}.cwasm",
        &source.digest()[..16],
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

/// Removes other builds of the renderer (80 MB of wasm, 160 MB compiled)
/// from the cache.
fn prune(dir: &Path, keep: &[&str]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let build = name.ends_with(".cwasm") || name.ends_with(".wasm");
        if name.starts_with("helm-renderer-") && build && !keep.contains(&name.as_ref()) {
            let path: PathBuf = entry.path();
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::debug!(path = %path.display(), %error, "could not prune an old renderer");
            }
        }
    }
}

/// The embedded build is what a `--features embed-helm-renderer` binary
/// has instead of the checkout: `.ci/run` tests it that way.
#[cfg(all(test, helm_renderer = "embedded"))]
mod tests {
    #[test]
    fn the_embedded_renderer_unpacks_to_a_module() {
        let cache = tempfile::tempdir().expect("temp dir");
        let source = super::SOURCE.expect("embedded");
        let wasm = source.wasm(cache.path()).expect("unpacks");
        assert!(wasmparser::Parser::is_core_wasm(&wasm));
        assert!(
            std::fs::read_dir(cache.path())
                .expect("readable")
                .next()
                .is_none(),
            "an embedded renderer needs nothing built into the cache"
        );
    }
}
