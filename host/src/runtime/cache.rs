//! Compiled controllers on disk, keyed by the component's sha256 and the
//! engine's settings, so a restart or a second registration of the same bytes
//! skips Cranelift.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::{RegistrationError, RuntimeError};

pub(super) struct CompileCache {
    dir: PathBuf,
    engine_key: String,
}

pub(super) struct Compiled {
    pub component: Component,
    pub digest: String,
}

impl CompileCache {
    pub(super) fn open(dir: &Path, engine: &Engine) -> Result<Self, RuntimeError> {
        std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Cache {
            path: dir.to_owned(),
            source,
        })?;
        // DefaultHasher::new() uses fixed keys, so the key is stable for one
        // build of wasmco; a different wasmtime changes the hash anyway.
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompileCache {
            dir: dir.to_owned(),
            engine_key: format!("{:016x}", hasher.finish()),
        })
    }

    fn path_for(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// The compiled component for `wasm`, from the cache when it is there.
    pub(super) fn compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
    ) -> Result<Compiled, RegistrationError> {
        let digest = hex::encode(Sha256::digest(wasm));
        let path = self.path_for(&digest);
        if path.exists() {
            match load_compiled(engine, &path) {
                Ok(component) => return Ok(Compiled { component, digest }),
                Err(error) => tracing::warn!(
                    path = %path.display(),
                    error = %super::error::describe(&error),
                    "cached controller unusable; compiling again"
                ),
            }
        }
        let component = Component::new(engine, wasm)
            .map_err(|e| RegistrationError::Compile(super::error::describe(&e)))?;
        Ok(Compiled { component, digest })
    }

    /// Writes an accepted component to the cache, unless it is there.
    pub(super) fn keep(&self, compiled: &Compiled) {
        let path = self.path_for(&compiled.digest);
        if path.exists() {
            return;
        }
        if let Err(error) = self.store(&path, &compiled.component) {
            // A cache that cannot be written costs a recompile next time, nothing more.
            tracing::warn!(path = %path.display(), %error, "could not cache compiled controller");
        }
    }

    fn store(&self, path: &Path, component: &Component) -> Result<(), String> {
        let bytes = component
            .serialize()
            .map_err(|e| super::error::describe(&e))?;
        let mut file = tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| e.to_string())?;
        std::io::Write::write_all(&mut file, &bytes).map_err(|e| e.to_string())?;
        file.persist(path).map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// Loads a compiled controller this cache wrote.
#[allow(unsafe_code)]
pub(super) fn load_compiled(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: wasmtime trusts a serialized component to hold valid machine
    // code. Only this module writes the cache directory, from
    // `Component::serialize` of this engine's configuration (the engine key is
    // in the file name), and files are renamed into place whole, so a file
    // here is either complete output of ours or refused by the header checks
    // `deserialize_file` does on version and settings.
    unsafe { Component::deserialize_file(engine, path) }
}
