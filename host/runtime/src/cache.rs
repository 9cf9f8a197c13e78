//! Compiled controllers on disk, keyed by the component's sha256 and the
//! engine's settings, so a restart or a second registration of the same bytes
//! skips Cranelift.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::compiled_file::{self, KeepError};
use crate::engine::{self, EngineSettings};
use crate::error::{self, RegistrationError, RuntimeError};

pub(super) struct CompileCache {
    dir: PathBuf,
    engine_key: String,
    /// Where compiles run: in a child process when set.
    compiler: Option<(CompilerProcess, EngineSettings)>,
}

pub(super) struct Compiled {
    pub component: Component,
    pub digest: String,
    /// Loaded from the cache rather than compiled.
    pub cached: bool,
}

impl CompileCache {
    pub(super) fn open(
        dir: &Path,
        engine: &Engine,
        compiler: Option<(CompilerProcess, EngineSettings)>,
    ) -> Result<Self, RuntimeError> {
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
            compiler,
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
                Ok(component) => {
                    return Ok(Compiled {
                        component,
                        digest,
                        cached: true,
                    });
                }
                Err(error) => tracing::warn!(
                    path = %path.display(),
                    error = %error::describe(&error),
                    "cached controller unusable; compiling again"
                ),
            }
        }
        let component = match &self.compiler {
            Some((process, settings)) => {
                compile_in_child(process, *settings, &self.dir, engine, wasm)?
            }
            None => Component::new(engine, wasm)
                .map_err(|e| RegistrationError::Compile(error::describe(&e)))?,
        };
        Ok(Compiled {
            component,
            digest,
            cached: false,
        })
    }

    /// Writes an accepted component to the cache, unless it is there.
    pub(super) fn keep(&self, compiled: &Compiled) {
        let path = self.path_for(&compiled.digest);
        if path.exists() {
            return;
        }
        if let Err(error) = self.store(&path, &compiled.component) {
            // A cache that cannot be written costs a recompile next time, nothing more.
            tracing::warn!(path = %path.display(), error = &error as &dyn std::error::Error, "could not cache compiled controller");
        }
    }

    fn store(&self, path: &Path, component: &Component) -> Result<(), KeepError> {
        let bytes = component
            .serialize()
            .map_err(|e| KeepError::Serialise(error::describe(&e)))?;
        compiled_file::keep(&self.dir, path, &bytes)
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

/// Compiling in a child process, where a compile that runs too long can be
/// killed: Cranelift cannot be interrupted, and a component shaped to make
/// it work for minutes would otherwise hold a thread of the server that
/// long.
#[derive(Debug, Clone)]
pub struct CompilerProcess {
    /// The program (the wasmco binary) and the arguments that make it the
    /// compiler (`compile-controller`); the engine's settings are added.
    pub command: Vec<std::ffi::OsString>,
    /// How long a compile may take before it is killed and refused.
    pub timeout: std::time::Duration,
}

/// How long an upload may take to compile unless the host says otherwise.
pub const DEFAULT_COMPILE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl CompilerProcess {
    /// This very program as the compiler (`wasmco compile-controller`);
    /// `None` when its path cannot be found.
    pub fn this_program(timeout: std::time::Duration) -> Option<Self> {
        let program = std::env::current_exe()
            .map_err(|error| tracing::warn!(%error, "compiling in this process: own path unknown"))
            .ok()?;
        Some(CompilerProcess {
            command: vec![program.into(), "compile-controller".into()],
            timeout,
        })
    }
}

/// The arguments that tell a compiler process the engine's settings.
fn settings_args(settings: &EngineSettings) -> [String; 3] {
    [
        format!("--pooling={}", settings.pooling),
        format!("--memory-bytes={}", settings.memory_bytes),
        format!("--max-instances={}", settings.max_concurrent_instances),
    ]
}

/// Runs `process` on `wasm` and loads what it wrote.
pub(super) fn compile_in_child(
    process: &CompilerProcess,
    settings: EngineSettings,
    dir: &Path,
    engine: &Engine,
    wasm: &[u8],
) -> Result<Component, RegistrationError> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let failed = |reason: String| RegistrationError::Compile(reason);
    let (program, args) = process
        .command
        .split_first()
        .ok_or_else(|| failed("no compiler program is configured".into()))?;
    let out = tempfile::Builder::new()
        .suffix(".cwasm")
        .tempfile_in(dir)
        .map_err(|e| failed(format!("cannot make a file for the compiled code: {e}")))?;
    let mut child = Command::new(program)
        .args(args)
        .args(settings_args(&settings))
        .arg("--timeout-secs")
        .arg(process.timeout.as_secs().max(1).to_string())
        .arg("--out")
        .arg(out.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start the compiler process: {e}")))?;
    // Its stderr is drained as it comes, so a chatty child cannot block on a
    // full pipe; the first 64 KiB are kept for the error message.
    let stderr = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            use std::io::Read;
            let mut kept = Vec::new();
            let _ = stderr.by_ref().take(64 << 10).read_to_end(&mut kept);
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            String::from_utf8_lossy(&kept).into_owned()
        })
    });
    // The child reads all of stdin before it compiles, so this cannot block
    // on a full pipe in both directions.
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(wasm))
        .unwrap_or(Ok(()));
    let deadline = std::time::Instant::now() + process.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "it did not compile within {} s and was stopped",
                    process.timeout.as_secs_f64()
                )));
            }
            Err(e) => return Err(failed(format!("the compiler process failed: {e}"))),
        }
    };
    written.map_err(|e| failed(format!("cannot hand the component to the compiler: {e}")))?;
    if !status.success() {
        let message = stderr
            .and_then(|reader| reader.join().ok())
            .unwrap_or_default();
        let message = message.trim();
        return Err(failed(if message.is_empty() {
            format!("the compiler process ended with {status}")
        } else {
            message.to_owned()
        }));
    }
    load_compiled(engine, out.path()).map_err(|e| failed(error::describe(&e)))
}

/// The compiler process's side: reads a component from stdin, compiles it
/// with the engine settings given, and writes the code to `out`.
pub fn compile_to_file(
    wasm: &[u8],
    pooling: bool,
    memory_bytes: u64,
    max_instances: u32,
    out: &Path,
) -> Result<(), String> {
    let settings = EngineSettings {
        pooling,
        memory_bytes,
        max_concurrent_instances: max_instances,
    };
    let engine =
        Engine::new(&engine::wasmtime_config(&settings)).map_err(|e| error::describe(&e))?;
    let code = engine
        .precompile_component(wasm)
        .map_err(|e| error::describe(&e))?;
    std::fs::write(out, code).map_err(|e| e.to_string())
}
