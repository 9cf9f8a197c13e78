//! What controller calls cost and how they end, for `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::error::CallFailure;

/// A controller and how one call of it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    controller: String,
    outcome: &'static str,
}

/// A controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

/// Whether a component came from the compile cache.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabel {
    result: &'static str,
}

/// From 50 µs to about 3 s: a call is tens of microseconds when warm, its
/// deadline seconds.
fn call_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

/// Controller calls by controller (registered by the admin, so a bounded
/// set) and outcome.
#[derive(Clone)]
pub struct ControllerMetrics {
    calls: Family<CallLabels, Counter>,
    invalid_edits: Family<ControllerLabel, Counter>,
    compile_cache: Family<CacheLabel, Counter>,
    instantiation: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        ControllerMetrics {
            calls: Family::default(),
            invalid_edits: Family::default(),
            compile_cache: Family::default(),
            instantiation: Family::new_with_constructor(call_buckets),
            duration: Family::new_with_constructor(call_buckets),
        }
    }
}

impl ControllerMetrics {
    /// Adds the families to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "wasmco_controller_calls",
            "Controller calls by outcome: ok, deadline, memory, trap, error, invalid-edit, wrong-kind",
            self.calls.clone(),
        );
        registry.register(
            "wasmco_controller_invalid_edits",
            "Calls that returned edits the host refused (counted among the calls as ok: the call itself returned)",
            self.invalid_edits.clone(),
        );
        registry.register(
            "wasmco_controller_compile_cache",
            "Components loaded: hit (from the compile cache) or miss (compiled)",
            self.compile_cache.clone(),
        );
        registry.register_with_unit(
            "wasmco_controller_instantiation_duration",
            "How long instantiating a controller took when it was loaded",
            Unit::Seconds,
            self.instantiation.clone(),
        );
        registry.register_with_unit(
            "wasmco_controller_call_duration",
            "How long a controller call took, instantiation included",
            Unit::Seconds,
            self.duration.clone(),
        );
    }

    pub(crate) fn compiled(&self, from_cache: bool) {
        let result = if from_cache { "hit" } else { "miss" };
        self.compile_cache
            .get_or_create(&CacheLabel { result })
            .inc();
    }

    pub(crate) fn instantiated(&self, controller: &str, seconds: f64) {
        self.instantiation
            .get_or_create(&ControllerLabel {
                controller: controller.to_owned(),
            })
            .observe(seconds);
    }

    /// Records that `controller`'s last call returned edits the host refused.
    pub fn invalid_edit(&self, controller: &str) {
        self.invalid_edits
            .get_or_create(&ControllerLabel {
                controller: controller.to_owned(),
            })
            .inc();
    }

    /// Records one call of `controller`.
    pub(crate) fn record(&self, controller: &str, seconds: f64, failure: Option<&CallFailure>) {
        let outcome = match failure {
            None => "ok",
            Some(CallFailure::DeadlineExceeded { .. }) => "deadline",
            Some(CallFailure::MemoryLimit { .. }) => "memory",
            Some(CallFailure::Trap { .. }) => "trap",
            Some(CallFailure::Refused { .. }) => "error",
            Some(CallFailure::InvalidEdit { .. }) => "invalid-edit",
            Some(CallFailure::WrongKind { .. }) => "wrong-kind",
        };
        self.calls
            .get_or_create(&CallLabels {
                controller: controller.to_owned(),
                outcome,
            })
            .inc();
        self.duration
            .get_or_create(&ControllerLabel {
                controller: controller.to_owned(),
            })
            .observe(seconds);
    }
}
