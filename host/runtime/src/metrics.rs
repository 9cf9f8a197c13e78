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
    duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        ControllerMetrics {
            calls: Family::default(),
            invalid_edits: Family::default(),
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
        registry.register_with_unit(
            "wasmco_controller_call_duration",
            "How long a controller call took, instantiation included",
            Unit::Seconds,
            self.duration.clone(),
        );
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
