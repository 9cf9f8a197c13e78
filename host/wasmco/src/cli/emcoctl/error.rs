//! Why documents could not be read.

use std::path::PathBuf;

/// Why documents could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The values file is not a YAML mapping.
    #[error("values file {path}: {reason}")]
    Values {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A template placeholder could not be filled.
    #[error("{path}: {reason}")]
    Template {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A document is not an emcoctl document.
    #[error("{path}, document {index}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}
