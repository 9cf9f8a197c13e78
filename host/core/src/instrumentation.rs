//! Whether the layers record metrics: on, unless the host is started with
//! `--no-metrics` or a benchmark is measuring what recording costs. One
//! switch for the process, as the registry the families live in is one.

use std::sync::atomic::{AtomicBool, Ordering};

static RECORDING: AtomicBool = AtomicBool::new(true);

/// Whether metrics are recorded now.
pub fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// Turns recording on or off; the families keep what they counted.
pub fn set_recording(on: bool) {
    RECORDING.store(on, Ordering::Relaxed);
}
