//! Compiled code kept on disk for the next start: written whole or not at
//! all, since another host or the next start may load it at any moment and
//! must never read half a file.

use std::io::Write;
use std::path::Path;

/// Why compiled code could not be kept; the caller only logs it, since a
/// missing cache costs a recompile and nothing more.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeepError {
    #[error("cannot serialise the compiled code: {0}")]
    Serialise(String),
    #[error("cannot write the compiled code")]
    Write(#[source] std::io::Error),
}

/// Writes `bytes` to `path` through a temporary file in `dir` renamed into
/// place.
pub(crate) fn keep(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), KeepError> {
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(KeepError::Write)?;
    file.write_all(bytes).map_err(KeepError::Write)?;
    file.persist(path).map_err(|e| KeepError::Write(e.error))?;
    Ok(())
}
