//! A new controller project's files, whatever its language.

use std::path::Path;

use wasmco_runtime::ControllerKind;

use super::error::CliError;

/// Writes each `(relative path, text)` under `dir`, making directories.
pub fn write_files(dir: &Path, files: Vec<(&str, String)>) -> Result<(), CliError> {
    for (relative, text) in files {
        let path = dir.join(relative);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// A new project README's last words: where its controller is named.
/// Filled before `__NAME__` is.
pub(super) fn how_to_use(kind: ControllerKind) -> &'static str {
    match kind {
        ControllerKind::Gate => {
            "Name the gate in a DIG's rollout intent (`…/rollout-intents/NAME`:\n\
             `{\"gates\": [{\"controller\": \"__NAME__\", \"intent\": {\"soakSeconds\": 30}}]}`);\n\
             the rollout asks it each time a group is Ready."
        }
        ControllerKind::Placement | ControllerKind::Action => {
            "Name the controller in a DIG's intents (`{\"intent\": {\"__NAME__\": \"my-intent\"}}`)\n\
             and store its intent as a controller intent (`…/controller-intents/my-intent`)."
        }
    }
}
