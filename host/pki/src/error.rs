//! Why a certificate could not be made.

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// What was given cannot be used; the message says why.
    #[error("{field}: {reason}")]
    Invalid {
        /// The input at fault.
        field: &'static str,
        /// Why: the error that refused it, or a message where nothing
        /// failed but the input is not acceptable.
        #[source]
        reason: Box<dyn std::error::Error + Send + Sync>,
    },
    /// rcgen refused (an internal inconsistency, not bad input).
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    /// The bundle could not be packed (in memory; not expected).
    #[error("packing the bundle failed: {0}")]
    Archive(#[source] std::io::Error),
}

/// `field` cannot be used, for `reason`.
pub(crate) fn invalid(
    field: &'static str,
    reason: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> PkiError {
    PkiError::Invalid {
        field,
        reason: reason.into(),
    }
}
