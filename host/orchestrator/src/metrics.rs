//! How long instantiates and updates take, stage by stage, for `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// An action and one of its stages.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    action: &'static str,
    stage: &'static str,
}

/// From 100 µs to about 26 s.
fn stage_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 19))
}

/// Stage durations; cheap to clone (clones share their values).
#[derive(Clone)]
pub struct OrchestratorMetrics {
    stages: Family<StageLabels, Histogram, fn() -> Histogram>,
    /// The rollout driver's own time per group released.
    releases: Histogram,
}

impl Default for OrchestratorMetrics {
    fn default() -> Self {
        OrchestratorMetrics {
            stages: Family::new_with_constructor(stage_buckets),
            releases: stage_buckets(),
        }
    }
}

impl OrchestratorMetrics {
    /// Adds the family to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_with_unit(
            "wasmco_deploy_stage_duration",
            "How long each stage of an instantiate or update took: inputs (reading and rendering), placement and actions (the controllers), store (the context write)",
            Unit::Seconds,
            self.stages.clone(),
        );
        registry.register_with_unit(
            "wasmco_rollout_release_duration",
            "The rollout driver's own time per group it released: from the step that found the last group Ready to the next group's release stored, the gates' calls included",
            Unit::Seconds,
            self.releases.clone(),
        );
    }

    pub(crate) fn rollout_released(&self, seconds: f64) {
        self.releases.observe(seconds);
    }

    pub(crate) fn stage(&self, action: &'static str, stage: &'static str, seconds: f64) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        self.stages
            .get_or_create(&StageLabels { action, stage })
            .observe(seconds);
    }
}
