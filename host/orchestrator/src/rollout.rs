//! The rollout driver: on the host that reconciles a DIG, it watches the
//! groups its rollout released, and releases the next once the last is
//! Ready and the pause has passed, or stops the rollout when more
//! clusters failed (a resource Failed, or not Ready within the group's
//! timeout) or went unreachable than the intent allows. rsync holds the
//! clusters of the groups not released yet (see the rsync crate).
//!
//! It hears each reconcile's end (when a released group is likely Ready)
//! and looks every tick besides, so a pause or a timeout ends on time.
//! Its state is the DIG's, in the store: a host that takes a DIG over
//! goes on from the same group.

mod gates;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime};

use wasmco_core::ClusterRef;
use wasmco_core::wire::{RolloutPhase, RolloutProgress};
use wasmco_store::appcontext::{ReconcileListener, RolloutPlan, StoredContext, Tally, now};

use crate::error::OrchestratorError;
use crate::orchestrator::Orchestrator;
use crate::status::age;
use crate::target::DigRef;

/// How often every rollout under way is looked at.
const TICK: Duration = Duration::from_millis(250);

/// Drives the rollouts of the DIGs this host reconciles, for as long as
/// the returned value is kept.
pub struct RolloutDriver {
    heard: Mutex<mpsc::Sender<String>>,
}

impl RolloutDriver {
    /// Starts driving `orchestrator`'s rollouts: those under way now, and
    /// each one a reconcile's end brings up.
    pub fn start(orchestrator: &Orchestrator) -> Arc<RolloutDriver> {
        let (heard, hearing) = mpsc::channel();
        let driver = Arc::new(RolloutDriver {
            heard: Mutex::new(heard),
        });
        let listener: std::sync::Weak<dyn ReconcileListener> = Arc::downgrade(&driver) as _;
        orchestrator.listen(listener);
        let orchestrator = orchestrator.clone();
        std::thread::Builder::new()
            .name("rollouts".into())
            .spawn(move || drive(&orchestrator, &hearing))
            .map_err(|error| tracing::error!(%error, "rollout driver not started"))
            .ok();
        driver
    }
}

impl ReconcileListener for RolloutDriver {
    fn reconciled(&self, key: &str, context: &StoredContext) {
        if context.meta.rollout.is_some() {
            let heard = self.heard.lock().unwrap_or_else(|p| p.into_inner());
            // The driver gone: nothing to tell.
            let _ = heard.send(key.to_owned());
        }
    }
}

/// The driver's loop: until the [`RolloutDriver`] is dropped.
fn drive(orchestrator: &Orchestrator, hearing: &mpsc::Receiver<String>) {
    let mut rollouts = Rollouts::default();
    match orchestrator.shared.contexts.states() {
        Ok(states) => rollouts.under_way.extend(
            states
                .into_iter()
                .filter(|(_, s)| s.rollout.as_ref().is_some_and(|r| r.phase.is_open()))
                .map(|(key, _)| key),
        ),
        Err(error) => tracing::warn!(%error, "rollouts under way not read"),
    }
    loop {
        let keys: Vec<String> = match hearing.recv_timeout(TICK) {
            Ok(key) => {
                rollouts.under_way.insert(key.clone());
                std::iter::once(key).chain(hearing.try_iter()).collect()
            }
            Err(mpsc::RecvTimeoutError::Timeout) => rollouts.under_way.iter().cloned().collect(),
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        for key in keys {
            rollouts.under_way.insert(key.clone());
            let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rollouts.step(orchestrator, &key)
            }));
            match step {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    rollouts.under_way.remove(&key);
                    rollouts.plans.remove(&key);
                }
                Ok(Err(error)) => tracing::warn!(dig = %key, %error, "rollout step failed"),
                Err(_) => tracing::error!(dig = %key, "rollout step panicked"),
            }
        }
    }
}

/// A revision's rollout as the driver reads it once.
struct Planned {
    revision: u64,
    dig: DigRef,
    plan: RolloutPlan,
    /// Per cluster, the resources each app has there.
    expected: HashMap<ClusterRef, Vec<(String, usize)>>,
}

/// The rollouts the driver follows.
#[derive(Default)]
struct Rollouts {
    under_way: BTreeSet<String>,
    plans: HashMap<String, Planned>,
    /// A gate asked to be asked again: per DIG, for which revision and
    /// group, and when.
    waiting: HashMap<String, (u64, u32, Instant)>,
}

impl Rollouts {
    /// Looks at `key`'s rollout once; whether it is still to be followed.
    fn step(&mut self, orchestrator: &Orchestrator, key: &str) -> Result<bool, OrchestratorError> {
        let started = Instant::now();
        let state = orchestrator.shared.contexts.state(key)?;
        let Some(mut progress) = state.rollout.filter(|r| {
            r.phase == RolloutPhase::Progressing
                && r.revision == state.revision
                && state.state.is_deployed()
        }) else {
            return Ok(false);
        };
        if let Some(me) = &orchestrator.host
            && orchestrator.sync_work().get(key) != Some(me)
        {
            return Ok(false);
        }
        if self
            .plans
            .get(key)
            .is_none_or(|p| p.revision != progress.revision)
        {
            let planned = read_plan(orchestrator, key, progress.revision)?;
            self.plans.insert(key.to_owned(), planned);
        }
        let planned = &self.plans[key];
        let digs = orchestrator.digs();
        let mut verdict = judge(orchestrator, key, planned, &progress)?;
        if let Verdict::Ready = verdict {
            let marked = digs.steer_rollout(&planned.dig, progress.revision, |p| {
                p.ready_at = Some(now());
            })?;
            // Without a pause, the gates are asked now rather than a tick later.
            match marked.and_then(|state| state.rollout) {
                Some(marked) if planned.plan.intent.pause_seconds == 0 => {
                    progress = marked;
                    verdict = Verdict::Release;
                }
                _ => return Ok(true),
            }
        }
        let dig = planned.dig.clone();
        match verdict {
            Verdict::Wait | Verdict::Ready => {}
            Verdict::Release => self.release(orchestrator, key, &progress, started)?,
            Verdict::Stop(reason) => stop(orchestrator, &dig, &progress, reason)?,
        }
        Ok(true)
    }

    /// Asks the gates (unless one asked to wait until later) and releases
    /// the next group if they all proceed; `started` is when the step
    /// that found the group Ready began.
    fn release(
        &mut self,
        orchestrator: &Orchestrator,
        key: &str,
        progress: &RolloutProgress,
        started: Instant,
    ) -> Result<(), OrchestratorError> {
        let planned = &self.plans[key];
        let asked = (progress.revision, progress.released);
        if let Some((revision, group, until)) = self.waiting.get(key)
            && (*revision, *group) == asked
            && Instant::now() < *until
        {
            return Ok(());
        }
        let digs = orchestrator.digs();
        match ask_gates(orchestrator, key, planned, progress)? {
            gates::Gates::Proceed => {
                self.waiting.remove(key);
                digs.steer_rollout(&planned.dig, progress.revision, release)?;
                orchestrator
                    .metrics()
                    .rollout_released(started.elapsed().as_secs_f64());
            }
            gates::Gates::Wait(until, reason) => {
                self.waiting
                    .insert(key.to_owned(), (asked.0, asked.1, until));
                digs.steer_rollout(&planned.dig, progress.revision, |p| {
                    p.reason = Some(reason);
                })?;
            }
            gates::Gates::Stop(reason) => stop(orchestrator, &planned.dig, progress, reason)?,
        }
        Ok(())
    }
}

/// Stops the rollout, for `reason`.
fn stop(
    orchestrator: &Orchestrator,
    dig: &DigRef,
    progress: &RolloutProgress,
    reason: String,
) -> Result<(), OrchestratorError> {
    tracing::warn!(dig = %dig.key(), %reason, "rollout stopped");
    orchestrator
        .digs()
        .steer_rollout(dig, progress.revision, |p| {
            p.phase = RolloutPhase::Stopped;
            p.reason = Some(reason);
        })?;
    Ok(())
}

impl Orchestrator {
    /// The DIG's rollout, if its current revision has one, and its groups.
    pub fn rollout(
        &self,
        dig: &DigRef,
    ) -> Result<(Option<RolloutProgress>, Vec<Vec<ClusterRef>>), OrchestratorError> {
        self.digs().rollout(dig)
    }

    /// Pauses, resumes or aborts the DIG's rollout, as `actor`.
    pub fn act_on_rollout(
        &self,
        dig: &DigRef,
        action: crate::dig::RolloutAction,
        actor: crate::tenancy::Actor,
    ) -> Result<wasmco_store::appcontext::DigState, OrchestratorError> {
        self.digs().act_on_rollout(dig, action, actor)
    }
}

/// What the rollout's gates say now.
fn ask_gates(
    orchestrator: &Orchestrator,
    key: &str,
    planned: &Planned,
    progress: &RolloutProgress,
) -> Result<gates::Gates, OrchestratorError> {
    if planned.plan.intent.gates.is_empty() {
        return Ok(gates::Gates::Proceed);
    }
    let contexts = &orchestrator.shared.contexts;
    let tallies = contexts.tallies(key, progress.revision)?;
    let unreachable = crate::status::unreachable(contexts)?;
    gates::Asking {
        orchestrator,
        plan: &planned.plan,
        expected: &planned.expected,
        progress,
        tallies: &tallies,
        unreachable: &unreachable,
    }
    .ask()
}

/// The next group goes, or the rollout is done.
fn release(progress: &mut RolloutProgress) {
    if progress.released >= progress.groups {
        progress.phase = RolloutPhase::Done;
    } else {
        progress.released += 1;
    }
    progress.released_at = now();
    progress.ready_at = None;
    progress.reason = None;
}

fn read_plan(
    orchestrator: &Orchestrator,
    key: &str,
    revision: u64,
) -> Result<Planned, OrchestratorError> {
    let context = orchestrator.shared.contexts.read(key, revision)?;
    let meta = &context.meta;
    let dig = DigRef::of_context(meta);
    let mut expected: HashMap<ClusterRef, Vec<(String, usize)>> = HashMap::new();
    for app in &context.apps {
        for placement in &app.placement {
            let count = app.resources_on(&placement.cluster).len();
            let cell = (app.name.clone(), count);
            expected
                .entry(placement.cluster.clone())
                .or_default()
                .push(cell);
        }
    }
    let plan = context.meta.rollout.clone().ok_or_else(|| {
        OrchestratorError::Input(format!(
            "{} has a rollout of revision {revision}, which has no groups",
            dig.describe()
        ))
    })?;
    Ok(Planned {
        revision,
        dig,
        plan,
        expected,
    })
}

/// What the driver does next with a rollout.
enum Verdict {
    /// Its last group is not Ready yet, or pauses.
    Wait,
    /// Its last group just became Ready, and it pauses from now.
    Ready,
    /// The next group goes (or it is done).
    Release,
    /// Too many clusters failed or are unreachable: why.
    Stop(String),
}

/// Where `progress` stands: its released clusters' tallies against the
/// intent's limits, and its last group's readiness and pause.
fn judge(
    orchestrator: &Orchestrator,
    key: &str,
    planned: &Planned,
    progress: &RolloutProgress,
) -> Result<Verdict, OrchestratorError> {
    let contexts = &orchestrator.shared.contexts;
    let tallies = contexts.tallies(key, progress.revision)?;
    let intent = &planned.plan.intent;
    let released = usize::try_from(progress.released).unwrap_or(usize::MAX);
    let groups = &planned.plan.groups;
    let Some(last) = groups.get(released.saturating_sub(1)) else {
        return Ok(Verdict::Release);
    };
    let ready = |cluster: &ClusterRef| cluster_ready(planned, &tallies, cluster);
    let now_ = SystemTime::now();
    let timed_out =
        age(&progress.released_at, now_) >= Duration::from_secs(intent.group_timeout_seconds);
    let unreachable = crate::status::unreachable(contexts)?;
    let mut failed: BTreeMap<&ClusterRef, &str> = BTreeMap::new();
    let mut unavailable = Vec::new();
    for cluster in groups.iter().take(released).flatten() {
        if unreachable.contains(cluster) {
            unavailable.push(cluster.to_string());
        } else if cluster_failed(planned, &tallies, cluster) {
            failed.insert(cluster, "a resource failed");
        } else if timed_out && last.contains(cluster) && !ready(cluster) {
            failed.insert(cluster, "not Ready in time");
        }
    }
    let group = released;
    let clusters: usize = groups.iter().take(released).map(Vec::len).sum();
    if failed.len() > intent.max_failures.of(clusters) {
        let list: Vec<String> = failed
            .iter()
            .map(|(c, why)| format!("{c} ({why})"))
            .collect();
        return Ok(Verdict::Stop(format!(
            "group {group} of {}: {} clusters failed, more than maxFailures {}: {}",
            groups.len(),
            failed.len(),
            intent.max_failures.describe(clusters),
            list.join(", ")
        )));
    }
    if unavailable.len() > intent.max_unavailable.of(clusters) {
        return Ok(Verdict::Stop(format!(
            "group {group} of {}: {} clusters unreachable, more than maxUnavailable {}: {}",
            groups.len(),
            unavailable.len(),
            intent.max_unavailable.describe(clusters),
            unavailable.join(", ")
        )));
    }
    let settled = last
        .iter()
        .all(|c| ready(c) || failed.contains_key(c) || unreachable.contains(c));
    if !settled {
        return Ok(Verdict::Wait);
    }
    let pause = Duration::from_secs(intent.pause_seconds);
    Ok(match &progress.ready_at {
        // Gates are told how long the group has been Ready.
        _ if pause.is_zero() && intent.gates.is_empty() => Verdict::Release,
        None => Verdict::Ready,
        Some(at) if age(at, now_) >= pause => Verdict::Release,
        Some(_) => Verdict::Wait,
    })
}

/// Whether every resource of every app on `cluster` is recorded Ready.
fn cluster_ready(
    planned: &Planned,
    tallies: &HashMap<String, HashMap<ClusterRef, Tally>>,
    cluster: &ClusterRef,
) -> bool {
    planned.expected.get(cluster).is_none_or(|cells| {
        cells.iter().all(|(app, count)| {
            *count == 0
                || tallies
                    .get(app)
                    .and_then(|t| t.get(cluster))
                    .is_some_and(|t| t.ready >= *count)
        })
    })
}

/// Whether a resource of an app on `cluster` failed to apply.
fn cluster_failed(
    planned: &Planned,
    tallies: &HashMap<String, HashMap<ClusterRef, Tally>>,
    cluster: &ClusterRef,
) -> bool {
    planned.expected.get(cluster).is_some_and(|cells| {
        cells.iter().any(|(app, _)| {
            tallies
                .get(app)
                .and_then(|t| t.get(cluster))
                .is_some_and(|t| t.failed > 0)
        })
    })
}
