//! What rsync does to clusters, for `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// How something ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

/// rsync's counters; cheap to clone (they share their values).
#[derive(Clone, Default)]
pub struct RsyncMetrics {
    objects: Family<Outcome, Counter>,
    reconciles: Family<Outcome, Counter>,
    reconciling: Gauge,
}

impl RsyncMetrics {
    /// Adds the families to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "wasmco_rsync_objects",
            "Objects rsync applied to clusters, or failed to (refused, or the cluster away)",
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
    }

    pub(crate) fn object(&self, outcome: &'static str) {
        self.objects.get_or_create(&Outcome { outcome }).inc();
    }

    pub(crate) fn reconcile_started(&self) {
        self.reconciling.inc();
    }

    pub(crate) fn reconcile_ended(&self, outcome: &'static str) {
        self.reconciling.dec();
        self.reconciles.get_or_create(&Outcome { outcome }).inc();
    }
}
