//! How long the store takes to make a write durable, for `/metrics`.

use std::time::Instant;

use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// The store's latency; cheap to clone (clones share their values).
#[derive(Clone)]
pub struct StoreMetrics {
    flush: Histogram,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        // From 50 µs (a flush with nothing new) to about 3 s (a stalled disk,
        // or etcd electing a leader).
        StoreMetrics {
            flush: Histogram::new(exponential_buckets(0.000_05, 2.0, 17)),
        }
    }
}

impl StoreMetrics {
    /// Adds the family to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_with_unit(
            "wasmco_store_flush_duration",
            "How long a write took to become durable: sled's flush to disk; on etcd, the write's round trip (its fsync and quorum)",
            Unit::Seconds,
            self.flush.clone(),
        );
    }

    /// Runs `write`, recording how long it took.
    pub(crate) fn flushed<T>(&self, write: impl FnOnce() -> T) -> T {
        if !wasmco_core::instrumentation::recording() {
            return write();
        }
        let started = Instant::now();
        let written = write();
        self.flush.observe(started.elapsed().as_secs_f64());
        written
    }
}
