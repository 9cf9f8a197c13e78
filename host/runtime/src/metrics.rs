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

/// How many calls of one controller the status page is shown.
const RECENT_CALLS: usize = 20;

/// One call of a controller, for the status page.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentCall {
    /// When it ended, in milliseconds since the Unix epoch.
    pub ended_unix_ms: u64,
    /// How long it took, in milliseconds.
    pub millis: f64,
    /// `ok`, or how it failed (the `outcome` label of the calls counter).
    pub outcome: &'static str,
}

/// A controller's calls since the host started: counts, and the last few.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallHistory {
    /// Calls made.
    pub calls: u64,
    /// Calls that did not end `ok`.
    pub failures: u64,
    /// The last calls, oldest first.
    pub recent: std::collections::VecDeque<RecentCall>,
}

/// Controller calls by controller (registered by the admin, so a bounded
/// set) and outcome.
#[derive(Clone)]
pub struct ControllerMetrics {
    history: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, CallHistory>>>,
    calls: Family<CallLabels, Counter>,
    invalid_edits: Family<ControllerLabel, Counter>,
    compile_cache: Family<CacheLabel, Counter>,
    instantiation: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        ControllerMetrics {
            history: Default::default(),
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
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        let result = if from_cache { "hit" } else { "miss" };
        self.compile_cache
            .get_or_create(&CacheLabel { result })
            .inc();
    }

    pub(crate) fn instantiated(&self, controller: &str, seconds: f64) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.instantiation
            .get_or_create(&ControllerLabel {
                controller: controller.to_owned(),
            })
            .observe(seconds);
    }

    /// Records that `controller`'s last call returned edits the host refused.
    pub fn invalid_edit(&self, controller: &str) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.invalid_edits
            .get_or_create(&ControllerLabel {
                controller: controller.to_owned(),
            })
            .inc();
    }

    /// Records one call of `controller`.
    pub(crate) fn record(&self, controller: &str, seconds: f64, failure: Option<&CallFailure>) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
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
        let mut history = self
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Allocates the name once per controller, not once per call.
        if !history.contains_key(controller) {
            history.insert(controller.to_owned(), CallHistory::default());
        }
        let Some(of_controller) = history.get_mut(controller) else {
            return;
        };
        of_controller.calls += 1;
        of_controller.failures += u64::from(failure.is_some());
        if of_controller.recent.len() == RECENT_CALLS {
            of_controller.recent.pop_front();
        }
        of_controller.recent.push_back(RecentCall {
            ended_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
                }),
            millis: seconds * 1e3,
            outcome,
        });
    }

    /// Each controller's calls since the host started, by name.
    pub fn history(&self) -> std::collections::BTreeMap<String, CallHistory> {
        self.history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(name, history)| (name.clone(), history.clone()))
            .collect()
    }
}
