//! Failover: a DIG whose failover intent says `replace` is placed again,
//! as an update would place it, when a cluster it is on stays unreachable
//! past the intent's grace period. Placement then may not choose a
//! cluster that is unreachable, or that answers again for less than the
//! intent's healthy period, so a flapping cluster does not bounce apps.
//! rsync does the rest: it deploys the new revision and removes the apps
//! from the cluster it left once that cluster answers (and, if it answers
//! while the move is under way, only once the new copies are Ready).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use wasmco_core::ClusterRef;
use wasmco_core::specs::FailoverIntentSpec;
use wasmco_core::wire::{ClusterHealth, Reachability};

use crate::error::OrchestratorError;
use crate::orchestrator::Orchestrator;
use crate::status::age;
use crate::target::DigRef;

/// How often the watch looks at the clusters' health records.
const TICK: Duration = Duration::from_secs(1);

/// How long a move that failed (placement found nowhere else) waits
/// before it is tried again for the same revision.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// Watches the clusters' health for the DIGs this host reconciles, on a
/// thread of its own, for as long as the returned value is kept.
pub struct FailoverWatch {
    _alive: (),
}

impl FailoverWatch {
    /// Starts watching for `orchestrator`'s DIGs.
    pub fn start(orchestrator: &Orchestrator) -> Arc<FailoverWatch> {
        let watch = Arc::new(FailoverWatch { _alive: () });
        let alive = Arc::downgrade(&watch);
        let orchestrator = orchestrator.clone();
        std::thread::Builder::new()
            .name("failover".into())
            .spawn(move || watch_loop(&orchestrator, &alive))
            .map_err(|error| tracing::error!(%error, "failover watch not started"))
            .ok();
        watch
    }
}

fn watch_loop(orchestrator: &Orchestrator, alive: &Weak<FailoverWatch>) {
    let mut memory = Memory::default();
    while alive.strong_count() > 0 {
        std::thread::sleep(TICK);
        let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pass(orchestrator, &mut memory)
        }));
        match pass {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "failover watch could not look"),
            Err(_) => tracing::error!("failover watch panicked; it goes on"),
        }
    }
}

/// A DIG that moves off a dead cluster: its failover intent, itself and
/// the clusters it is on.
type Watched = (FailoverIntentSpec, DigRef, BTreeSet<ClusterRef>);

/// What the watch keeps between passes.
#[derive(Default)]
struct Memory {
    /// Per DIG key: the revision read, and what the watch needs of it
    /// when its failover intent replaces.
    placed: HashMap<String, (u64, Option<Watched>)>,
    /// Moves that failed, by DIG key and revision: when.
    failed: HashMap<(String, u64), SystemTime>,
}

/// One look: every DIG this host reconciles that is placed on a cluster
/// unreachable for longer than its grace period is placed again.
fn pass(orchestrator: &Orchestrator, memory: &mut Memory) -> Result<(), OrchestratorError> {
    let contexts = &orchestrator.shared.contexts;
    let down: BTreeMap<ClusterRef, ClusterHealth> = contexts
        .healths()?
        .into_iter()
        .filter(|(_, health)| health.state == Reachability::Unreachable)
        .collect();
    if down.is_empty() {
        // At rest nothing more is read.
        memory.failed.clear();
        return Ok(());
    }
    let work = orchestrator.host.as_ref().map(|_| orchestrator.sync_work());
    for (key, state) in contexts.states()? {
        if !state.state.is_deployed() || state.revision == 0 {
            continue;
        }
        if let (Some(work), Some(me)) = (&work, &orchestrator.host)
            && work.get(&key) != Some(me)
        {
            continue;
        }
        if memory
            .placed
            .get(&key)
            .is_none_or(|e| e.0 != state.revision)
        {
            let (meta, placed) = contexts.read_placed(&key, state.revision)?;
            let dig = DigRef::of_context(&meta);
            let watched = meta
                .failover
                .filter(FailoverIntentSpec::replaces)
                .map(|spec| (spec, dig, placed));
            memory.placed.insert(key.clone(), (state.revision, watched));
        }
        if let Some((_, Some(watched))) = memory.placed.get(&key) {
            let watched = watched.clone();
            move_off(
                orchestrator,
                memory,
                (&key, state.revision),
                &watched,
                &down,
            );
        }
    }
    Ok(())
}

/// Places the DIG `key` (at `revision`) again if a cluster it is on has
/// been down for longer than its grace period, unless that failed lately.
fn move_off(
    orchestrator: &Orchestrator,
    memory: &mut Memory,
    (key, revision): (&str, u64),
    (spec, dig, placed): &Watched,
    down: &BTreeMap<ClusterRef, ClusterHealth>,
) {
    let now = SystemTime::now();
    let grace = Duration::from_secs(spec.grace_seconds);
    let Some((cluster, health)) = placed
        .iter()
        .filter_map(|c| down.get(c).map(|h| (c, h)))
        .find(|(_, health)| age(&health.since, now) >= grace)
    else {
        return;
    };
    let attempt = (key.to_owned(), revision);
    if memory
        .failed
        .get(&attempt)
        .is_some_and(|at| now.duration_since(*at).unwrap_or_default() < RETRY_AFTER)
    {
        return;
    }
    let reason = format!(
        "failover: cluster {cluster} unreachable since {} (grace {} s); placed again without it",
        health.since, spec.grace_seconds
    );
    match orchestrator.digs().failover(dig, revision, reason) {
        Ok(Some(moved)) => {
            tracing::info!(dig = %key, %cluster, revision = moved.revision, "failover: placed again");
        }
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(dig = %key, %cluster, %error, "failover: could not place again");
            memory.failed.insert(attempt, now);
        }
    }
}
