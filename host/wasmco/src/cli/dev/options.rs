//! How the dev server is set up.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How the dev server is set up.
#[derive(Debug, Clone)]
pub struct DevOptions {
    /// The data directory; `None` for a throwaway one.
    pub data_dir: Option<PathBuf>,
    /// The API's address; the clusters take the next ports (any free ones
    /// when it is port 0).
    pub listen: SocketAddr,
    /// How long a workload takes to become ready in the virtual clusters.
    pub ready_after: Duration,
    /// Where `.wasm` controllers are watched; `<data>/controllers` by default.
    pub controllers_dir: Option<PathBuf>,
    /// An example directory to apply once everything is up.
    pub example: Option<PathBuf>,
    /// Draw the example's status as progress bars.
    pub progress: bool,
}
