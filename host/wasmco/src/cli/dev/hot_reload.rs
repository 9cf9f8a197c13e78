//! Controllers hot-reloaded from a directory of `.wasm` files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmco_core::ControllerSpec;
use wasmco_core::wire::Answered;
use wasmco_runtime::ControllerKind;

use super::console::{Console, say};
use crate::cli::client::ApiClient;
use crate::cli::controller::{Registration, upload};
use crate::cli::error::CliError;

/// Registers every `.wasm` in `dir` now and again whenever one changes.
/// The watcher stops when the returned value is dropped.
pub fn start_hot_reload(
    client: &ApiClient,
    dir: &Path,
    console: Console,
) -> Result<notify::RecommendedWatcher, CliError> {
    use notify::Watcher;
    let (events, incoming) = std::sync::mpsc::channel::<notify::Result<notify::Event>>();
    let mut watcher = notify::recommended_watcher(events)
        .map_err(|e| CliError::Usage(format!("cannot watch {}: {e}", dir.display())))?;
    watcher
        .watch(dir, notify::RecursiveMode::NonRecursive)
        .map_err(|e| CliError::Usage(format!("cannot watch {}: {e}", dir.display())))?;
    let client = client.clone();
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let existing: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_wasm(p))
            .collect();
        for path in existing {
            reload(&client, &path, &console);
        }
        while let Ok(event) = incoming.recv() {
            let mut changed: Vec<PathBuf> = Vec::new();
            let mut note = |event: notify::Result<notify::Event>| {
                if let Ok(event) = event
                    && (event.kind.is_create() || event.kind.is_modify())
                {
                    changed.extend(event.paths.into_iter().filter(|p| is_wasm(p)));
                }
            };
            note(event);
            // A copy arrives as several events; wait for the file to settle.
            std::thread::sleep(Duration::from_millis(300));
            while let Ok(event) = incoming.try_recv() {
                note(event);
            }
            changed.sort();
            changed.dedup();
            for path in changed {
                if path.exists() {
                    reload(&client, &path, &console);
                }
            }
        }
    });
    Ok(watcher)
}

fn is_wasm(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
}

/// Registers one `.wasm`, keeping the priority it was registered with.
fn reload(client: &ApiClient, path: &Path, console: &Console) {
    let Some(name) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        return;
    };
    let outcome = (|| -> Result<(bool, ControllerKind), CliError> {
        let wasm = std::fs::read(path).map_err(|source| CliError::Io {
            path: path.to_owned(),
            source,
        })?;
        let kind = wasmco_runtime::kind_exported_by(&wasm)
            .ok_or_else(|| CliError::Usage("exports no wasmco controller world".into()))?;
        let priority = client
            .get_as::<Answered<ControllerSpec>>(&format!("v2/controllers/{name}"))
            .map_or(100, |c| c.spec.priority);
        let registration = Registration {
            name: name.clone(),
            kind: Some(kind),
            priority,
        };
        Ok((upload(client, &registration, wasm)?, kind))
    })();
    match outcome {
        Ok((new, kind)) => say(
            console,
            format!(
                "hot reload: {} {kind} controller {name} from {}",
                if new { "registered" } else { "reloaded" },
                path.display()
            ),
        ),
        Err(error) => say(
            console,
            format!(
                "hot reload: {name} from {} refused: {error}",
                path.display()
            ),
        ),
    }
}
