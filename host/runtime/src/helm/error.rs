//! Why a chart was not rendered.

use std::time::Duration;

/// Why a chart was not rendered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HelmError {
    /// This build has no renderer.
    #[error(
        "this wasmco was built without Helm support (Go was not installed when it was built); \
         install Go 1.24 or later and build it again to deploy Helm charts"
    )]
    Unavailable,
    /// The renderer itself would not compile or start.
    #[error("the Helm renderer does not start: {0}")]
    Broken(String),
    /// Helm refused the chart or its values; the message is Helm's.
    #[error("{message}")]
    Chart {
        /// Where: `load` (the chart), `values` or `render` (a template).
        stage: String,
        /// Helm's message.
        message: String,
    },
    /// The chart made the renderer exceed one of its limits.
    #[error("the chart exceeded the Helm renderer's {0}")]
    Limit(String),
    /// The renderer failed in a way Helm does not report.
    #[error("the Helm renderer failed: {0}")]
    Crashed(String),
    /// Every render slot stayed taken for as long as a render waits.
    #[error(
        "the server is busy rendering other charts (none of its {slots} render slots freed up in {waited:?}); try again shortly"
    )]
    Busy {
        /// Renders at once.
        slots: usize,
        /// How long this one waited.
        waited: Duration,
    },
}
