//! How the renderer is set up, and what one render may use.

use std::path::PathBuf;
use std::time::Duration;

/// How the renderer is set up.
#[derive(Debug, Clone)]
pub struct HelmConfig {
    /// Where the compiled renderer is cached (shared by every server on
    /// the machine: it is wasmco's own code, not a user's).
    pub cache_dir: PathBuf,
    /// What one render may use.
    pub limits: HelmLimits,
    /// Keep an initialised instance ready for the next render.
    pub keep_warm: bool,
    /// Renders (and chart checks) at once: each may use the memory cap,
    /// so this bounds what charts can take of the host together.
    pub concurrent_renders: usize,
    /// How long a render waits for its turn before it is refused as busy.
    pub queue_wait: Duration,
}

impl Default for HelmConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        HelmConfig {
            cache_dir: default_cache_dir(),
            limits: HelmLimits::default(),
            keep_warm: true,
            concurrent_renders: cores.clamp(1, 4),
            queue_wait: Duration::from_secs(30),
        }
    }
}

/// `$XDG_CACHE_HOME/wasmco`, else `~/.cache/wasmco`.
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::home_dir().map(|home| home.join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("wasmco")
}

/// What one render may use. Helm needs more than a controller: Go's
/// runtime, Helm's package state and the chart's values all live in the
/// instance's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelmLimits {
    /// Initialising Go and Helm in a fresh instance.
    pub init_deadline: Duration,
    /// Rendering one chart.
    pub render_deadline: Duration,
    /// The instance's linear memory.
    pub memory_bytes: usize,
    /// The rendered output.
    pub output_bytes: usize,
}

impl Default for HelmLimits {
    fn default() -> Self {
        HelmLimits {
            init_deadline: Duration::from_secs(10),
            render_deadline: Duration::from_secs(10),
            memory_bytes: 256 << 20,
            output_bytes: 16 << 20,
        }
    }
}
