//! What rsync does to clusters, for `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// How something ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

/// A cluster (`provider+cluster`): registered by the admin, so a bounded set.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabel {
    cluster: String,
}

/// From 1 ms to about 65 s (retries with backoff included).
fn apply_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// rsync's counters; cheap to clone (they share their values).
#[derive(Clone)]
pub struct RsyncMetrics {
    objects: Family<Outcome, Counter>,
    reconciles: Family<Outcome, Counter>,
    reconciling: Gauge,
    waiting_for_slot: Gauge,
    apply_duration: Family<ClusterLabel, Histogram, fn() -> Histogram>,
    retries: Counter,
    drift_repairs: Counter,
    looks_skipped: Counter,
    reads_all: Counter,
}

impl Default for RsyncMetrics {
    fn default() -> Self {
        RsyncMetrics {
            objects: Family::default(),
            reconciles: Family::default(),
            reconciling: Gauge::default(),
            waiting_for_slot: Gauge::default(),
            apply_duration: Family::new_with_constructor(apply_buckets),
            retries: Counter::default(),
            drift_repairs: Counter::default(),
            looks_skipped: Counter::default(),
            reads_all: Counter::default(),
        }
    }
}

impl RsyncMetrics {
    /// Adds the families to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "wasmco_rsync_objects",
            "Objects rsync applied to or deleted from clusters, or failed to (applied, failed, deleted, delete-failed)",
            self.objects.clone(),
        );
        registry.register(
            "wasmco_rsync_reconciles",
            "Reconciles by how they ended: settled, idle, incomplete (retried with backoff), failed, superseded",
            self.reconciles.clone(),
        );
        registry.register(
            "wasmco_rsync_reconciles_in_progress",
            "Reconciles running now",
            self.reconciling.clone(),
        );
        registry.register(
            "wasmco_rsync_queue_depth",
            "Cluster jobs (an app's objects on one cluster, or a clean-up) waiting for one of the parallel_clusters slots",
            self.waiting_for_slot.clone(),
        );
        registry.register_with_unit(
            "wasmco_rsync_apply_duration",
            "How long applying one object to a cluster took, its retries included",
            Unit::Seconds,
            self.apply_duration.clone(),
        );
        registry.register(
            "wasmco_rsync_retries",
            "Requests to clusters tried again after the cluster did not answer",
            self.retries.clone(),
        );
        registry.register(
            "wasmco_rsync_drift_repairs",
            "Objects put back after someone changed or deleted them on a cluster",
            self.drift_repairs.clone(),
        );
        registry.register(
            "wasmco_rsync_resync_looks_skipped",
            "Cluster jobs (an app's objects on one cluster, or a clean-up) a resync left unread because the watches had reported every change since the last read",
            self.looks_skipped.clone(),
        );
        registry.register(
            "wasmco_rsync_reads_all",
            "Reconciles that read every object on every cluster (after an action, a failure or a nudge, and every sixth resync), counted as they end",
            self.reads_all.clone(),
        );
    }

    pub(crate) fn look_skipped(&self) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.looks_skipped.inc();
    }

    pub(crate) fn read_all(&self) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.reads_all.inc();
    }

    pub(crate) fn applied_in(&self, cluster: &wasmco_core::ClusterRef, seconds: f64) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.apply_duration
            .get_or_create(&ClusterLabel {
                cluster: cluster.to_string(),
            })
            .observe(seconds);
    }

    pub(crate) fn retry(&self) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.retries.inc();
    }

    pub(crate) fn drift_repaired(&self) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.drift_repairs.inc();
    }

    pub(crate) fn object(&self, outcome: &'static str) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.objects.get_or_create(&Outcome { outcome }).inc();
    }

    pub(crate) fn reconcile_started(&self) {
        self.reconciling.inc();
    }

    pub(crate) fn reconcile_ended(&self, outcome: &'static str) {
        // The gauge always: it must come back to zero whenever recording
        // was switched.
        self.reconciling.dec();
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.reconciles.get_or_create(&Outcome { outcome }).inc();
    }

    /// Counts a cluster job as waiting for a slot until the guard drops.
    pub(crate) fn waiting(&self) -> Waiting {
        self.waiting_for_slot.inc();
        Waiting(self.waiting_for_slot.clone())
    }
}

/// A cluster job waiting for a slot; no longer counted once dropped (given
/// the slot, or its reconcile cancelled).
pub(crate) struct Waiting(Gauge);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.dec();
    }
}
