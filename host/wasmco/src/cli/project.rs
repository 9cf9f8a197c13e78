//! A new controller project's files, whatever its language.

use std::path::Path;

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

/// `controller new` has no template for a gate yet.
pub(super) fn no_gate_template() -> CliError {
    CliError::Usage(
        "there is no template for gate controllers yet: start from tests/guests/gate, and see docs/controllers.md".into(),
    )
}
