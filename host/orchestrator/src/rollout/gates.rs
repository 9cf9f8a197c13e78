//! Asking a rollout's gate controllers whether the next group goes: each
//! gets the rollout as it stands (the clusters released, what is Ready
//! where, how long) and answers proceed, wait or abort, in a sandboxed
//! call under the controller's limits.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant, SystemTime};

use wasmco_core::ClusterRef;
use wasmco_core::wire::RolloutProgress;
use wasmco_runtime::ControllerKind;
use wasmco_runtime::contract::{GateCell, GateFacts, GateRequest, Verdict};
use wasmco_store::appcontext::Tally;

use crate::error::OrchestratorError;
use crate::orchestrator::Orchestrator;
use crate::status::age;
use wasmco_store::appcontext::RolloutPlan;

/// What the gates said, all together.
pub(super) enum Gates {
    /// Every gate proceeds (or there is none).
    Proceed,
    /// A gate waits: ask again at the instant given; why.
    Wait(Instant, String),
    /// A gate aborted, or failed: why.
    Stop(String),
}

/// What the driver needs to ask the gates about one rollout.
pub(super) struct Asking<'a> {
    pub(super) orchestrator: &'a Orchestrator,
    /// The rollout's intent and groups.
    pub(super) plan: &'a RolloutPlan,
    /// Per cluster, the resources each app has there.
    pub(super) expected: &'a HashMap<ClusterRef, Vec<(String, usize)>>,
    pub(super) progress: &'a RolloutProgress,
    pub(super) tallies: &'a HashMap<String, HashMap<ClusterRef, Tally>>,
    pub(super) unreachable: &'a BTreeSet<ClusterRef>,
}

impl Asking<'_> {
    /// Asks each gate of the intent in order, until one does not proceed.
    pub(super) fn ask(&self) -> Result<Gates, OrchestratorError> {
        let gates = &self.plan.intent.gates;
        if gates.is_empty() {
            return Ok(Gates::Proceed);
        }
        let shared = &self.orchestrator.shared;
        for gate in gates {
            let stored = self
                .orchestrator
                .registry
                .current(&gate.controller, &shared.db)
                .map_err(|e| OrchestratorError::Input(e.to_string()))?;
            let Some(controller) = stored.filter(|c| c.kind() == ControllerKind::Gate) else {
                return Ok(Gates::Stop(format!(
                    "gate {} is not a stored gate controller",
                    gate.controller
                )));
            };
            let request = self.request(&gate.intent.to_string())?;
            let verdict = match controller.check(&request) {
                Ok(output) => output.value,
                Err(error) => return Ok(Gates::Stop(format!("gate {error}"))),
            };
            match verdict {
                Verdict::Proceed => {}
                Verdict::Wait(wait) => {
                    let after = Duration::from_millis(u64::from(wait.retry_after_ms.max(100)));
                    let reason = format!("gate {} waits: {}", gate.controller, wait.reason);
                    return Ok(Gates::Wait(Instant::now() + after, bounded(reason)));
                }
                Verdict::Abort(why) => {
                    let reason = format!("gate {} aborted: {why}", gate.controller);
                    return Ok(Gates::Stop(bounded(reason)));
                }
            }
        }
        Ok(Gates::Proceed)
    }

    /// The request a gate gets: the released clusters in group order.
    fn request(&self, intent: &str) -> Result<GateRequest, OrchestratorError> {
        let progress = self.progress;
        let released = usize::try_from(progress.released).unwrap_or(usize::MAX);
        let offered = crate::clusters::clusters(&self.orchestrator.shared.db)?;
        let by_ref: HashMap<ClusterRef, &wasmco_core::ClusterInfo> =
            offered.iter().map(|c| (c.reference(), c)).collect();
        // A cluster deleted since the revision was built is left out.
        let groups: Vec<Vec<&wasmco_core::ClusterInfo>> = self
            .plan
            .groups
            .iter()
            .take(released)
            .map(|group| {
                group
                    .iter()
                    .filter_map(|c| by_ref.get(c).copied())
                    .collect()
            })
            .collect();
        let mut cells = Vec::new();
        let mut unreachable = Vec::new();
        for (index, info) in (0u32..).zip(groups.iter().flatten()) {
            let cluster = info.reference();
            if self.unreachable.contains(&cluster) {
                unreachable.push(index);
            }
            for (app, resources) in self.expected.get(&cluster).into_iter().flatten() {
                let tally = self.tallies.get(app).and_then(|t| t.get(&cluster));
                let count = |n: Option<usize>| u32::try_from(n.unwrap_or(0)).unwrap_or(u32::MAX);
                cells.push(GateCell {
                    app,
                    cluster: index,
                    resources: count(Some(*resources)),
                    ready: count(tally.map(|t| t.ready)),
                    failed: count(tally.map(|t| t.failed)),
                });
            }
        }
        let now = SystemTime::now();
        let millis = |at: Option<&str>| {
            at.map_or(0, |at| {
                u64::try_from(age(at, now).as_millis()).unwrap_or(u64::MAX)
            })
        };
        let facts = GateFacts {
            intent,
            revision: progress.revision,
            from_revision: progress.from,
            groups: progress.groups,
            released: groups,
            cells,
            unreachable,
            released_ms: millis(Some(&progress.released_at)),
            ready_ms: millis(progress.ready_at.as_deref()),
        };
        Ok(facts.request())
    }
}

/// A gate's words, bounded as every message a controller gives is.
fn bounded(text: String) -> String {
    wasmco_core::limits::bounded(text)
}
