//! Why a CLI command failed.

use std::path::PathBuf;

use super::{client, emcoctl};

/// Why a CLI command failed; each variant reads as advice to a person.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The API refused or could not be reached.
    #[error(transparent)]
    Client(#[from] client::ClientError),
    /// Input documents could not be read.
    #[error(transparent)]
    Documents(#[from] emcoctl::DocumentError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing to the terminal failed.
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
    /// Building a controller failed.
    #[error("{0}")]
    Build(String),
    /// The dev server could not start.
    #[error(transparent)]
    Serve(#[from] crate::startup::ServeError),
    /// The command was given something it cannot use.
    #[error("{0}")]
    Usage(String),
}
