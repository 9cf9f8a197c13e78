//! One worker per target, each reconciling towards its target's latest
//! desired state; hand-offs only nudge it.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use backon::BackoffBuilder;
use futures_util::FutureExt;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinSet;

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::StoredContext;

use crate::drift::Applied;
use crate::engine::Inner;
use crate::target::Changed;

/// What a finished reconcile leaves to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Settled {
    /// Nothing until the next nudge (terminated, stopped, never deployed).
    Idle,
    /// The clusters match; look again after the resync interval.
    Resync,
    /// Something was not done (a cluster did not answer, an object was
    /// not deleted in time): try again with backoff.
    Incomplete,
}

/// How a worker is told to work.
struct Signals {
    /// Start again from the latest state, now.
    nudge: watch::Sender<()>,
    /// Objects a watch saw drift, repaired at once.
    drifts: mpsc::UnboundedSender<Drifted>,
}

/// An object of a target that a watch saw changed or deleted.
#[derive(Debug)]
pub(crate) struct Drifted {
    pub(crate) cluster: ClusterRef,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) change: Changed,
}

/// The revision a worker works towards, once its reconcile has read it;
/// `None` while it deploys nothing. Repairs read it.
///
/// Each reconcile writes it under the generation the worker gave it: a
/// superseded one, still running the moment it is aborted, cannot leave
/// its revision there for the next one's repairs (a terminate's deletions
/// would be "repaired" with what it ended).
#[derive(Default)]
pub(crate) struct Current {
    slot: Mutex<(u64, Option<Arc<StoredContext>>)>,
}

impl Current {
    /// Starts a new generation, with no revision yet; its number.
    fn begin(&self) -> u64 {
        let mut slot = self.lock();
        *slot = (slot.0 + 1, None);
        slot.0
    }

    /// Sets the revision of `generation`, unless a newer one began.
    pub(crate) fn set(&self, generation: u64, context: Option<Arc<StoredContext>>) {
        let mut slot = self.lock();
        if slot.0 == generation {
            slot.1 = context;
        }
    }

    /// The revision being deployed, if any.
    fn get(&self) -> Option<Arc<StoredContext>> {
        self.lock().1.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<Arc<StoredContext>>)> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The workers, by target key.
#[derive(Default)]
pub(crate) struct Workers {
    signals: Mutex<HashMap<String, Signals>>,
    /// Target keys by the DIG label value their objects carry.
    by_label: Mutex<HashMap<String, String>>,
    /// Dropped with the engine, which aborts every worker.
    tasks: Mutex<JoinSet<()>>,
}

impl Inner {
    /// Makes `key`'s worker (started on first use) reconcile again from
    /// the latest state, stopping the reconcile it is in.
    pub(crate) fn nudge(self: &Arc<Self>, key: &str) {
        let mut signals = self
            .workers
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = signals.get(key) {
            existing.nudge.send_replace(());
            return;
        }
        let (nudge, nudged) = watch::channel(());
        let (drifts, drifted) = mpsc::unbounded_channel();
        signals.insert(key.to_owned(), Signals { nudge, drifts });
        drop(signals);
        self.workers
            .by_label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(crate::owner::owner_label(key), key.to_owned());
        let mut tasks = self.workers.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Reap the workers that ended (only a panic ends one early).
        while let Some(ended) = tasks.try_join_next() {
            if let Err(error) = ended {
                tracing::error!(%error, "an rsync worker ended");
            }
        }
        tasks.spawn_on(
            work(Arc::downgrade(self), key.to_owned(), nudged, drifted),
            &self.runtime,
        );
    }
}

impl Workers {
    /// Whether `key` has a worker here.
    pub(crate) fn running(&self, key: &str) -> bool {
        self.signals().contains_key(key)
    }

    /// The targets with a worker here.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.signals().keys().cloned().collect()
    }

    /// Ends `key`'s worker, stopping the reconcile it is in.
    pub(crate) fn stop(&self, key: &str) {
        // Dropping its nudge sender ends the worker at its next await.
        if self.signals().remove(key).is_some() {
            tracing::info!(target = key, "handed over");
        }
    }

    /// Ends every worker; how many there were.
    pub(crate) fn stop_all(&self) -> usize {
        let mut signals = self.signals();
        let count = signals.len();
        signals.clear();
        count
    }

    fn signals(&self) -> std::sync::MutexGuard<'_, HashMap<String, Signals>> {
        self.signals.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    /// Hands an object a watch saw drift to the worker of the target whose
    /// label it carries, which repairs it at once.
    pub(crate) fn drifted(&self, drifted: Drifted) {
        let key = self
            .workers
            .by_label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&drifted.change.owner)
            .cloned();
        let Some(key) = key else {
            return;
        };
        if drifted
            .change
            .owner_key
            .as_ref()
            .is_some_and(|owner| *owner != key)
        {
            return;
        }
        if let Some(signals) = self
            .workers
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            // The worker ends only with its sender: a send cannot fail here.
            let _ = signals.drifts.send(drifted);
        }
    }

    /// Nudges every worker: a cluster came back.
    pub(crate) fn nudge_all(&self) {
        for signals in self
            .workers
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            signals.nudge.send_replace(());
        }
    }

    /// Backoff with jitter between `config.backoff`'s bounds, never ending.
    pub(crate) fn backoff(&self) -> backon::ExponentialBackoff {
        let (first, ceiling) = self.config.backoff;
        backon::ExponentialBuilder::new()
            .with_min_delay(first)
            .with_max_delay(ceiling)
            .with_jitter()
            .without_max_times()
            .build()
    }

    /// The resync interval plus up to a tenth of it, so that targets
    /// settled together do not all resync together.
    fn resync_pause(&self) -> Duration {
        self.config.resync.mul_f64(1.0 + fastrand::f64() / 10.0)
    }
}

/// How a reconcile ended, in a word.
fn ended(outcome: &Result<Settled, crate::engine::RsyncError>) -> &'static str {
    match outcome {
        Ok(Settled::Idle) => "idle",
        Ok(Settled::Resync) => "settled",
        Ok(Settled::Incomplete) => "incomplete",
        Err(_) => "failed",
    }
}

/// The worker of `key`. It holds the engine only while reconciling, and
/// ends when the engine is dropped (its nudge sender goes with it).
///
/// Drift a watch reports is repaired beside the reconcile, at once, with
/// the revision the reconcile read: not after it, since a reconcile may
/// wait a long time for a workload to become ready.
async fn work(
    engine: Weak<Inner>,
    key: String,
    mut nudged: watch::Receiver<()>,
    mut drifts: mpsc::UnboundedReceiver<Drifted>,
) {
    // Reconcile once more when done (a repaired object to wait for): a
    // stored permit, so any number of asks before then make one reconcile.
    let soon = Arc::new(Notify::new());
    let mut retries: Option<backon::ExponentialBackoff> = None;
    let applied = Arc::new(Applied::default());
    let current: Arc<Current> = Arc::default();
    loop {
        nudged.borrow_and_update();
        let Some(inner) = engine.upgrade() else {
            return;
        };
        // Tasks of their own, so that a panic in one is a failed reconcile
        // rather than the end of this worker; dropping a set aborts it.
        let mut reconcile = JoinSet::new();
        // Until the reconcile has read the state, a repair has no revision
        // to go by: the one read last may be what a terminate just ended.
        let generation = current.begin();
        let mut repairs = Repairs {
            inner: inner.clone(),
            key: key.clone(),
            applied: applied.clone(),
            current: current.clone(),
            soon: soon.clone(),
            running: JoinSet::new(),
            busy: HashMap::new(),
        };
        reconcile.spawn({
            let (inner, key, applied, current) =
                (inner.clone(), key.clone(), applied.clone(), current.clone());
            // Its logs carry the target, which a DIG action's span names too.
            let span = tracing::info_span!("reconcile", target = %key);
            tracing::Instrument::instrument(
                async move {
                    let outcome = inner.reconcile(&key, &applied, &current, generation).await;
                    tracing::info!(outcome = ended(&outcome), "reconcile ended");
                    outcome
                },
                span,
            )
        });
        inner.metrics.reconcile_started();
        let outcome = loop {
            tokio::select! {
                // Superseded: start again from the latest state.
                changed = nudged.changed() => {
                    inner.metrics.reconcile_ended("superseded");
                    if changed.is_err() {
                        return;
                    }
                    tracing::debug!(target = %key, "reconcile superseded");
                    break None;
                }
                Some(drifted) = drifts.recv() => repairs.start(drifted),
                Some(done) = repairs.running.join_next(), if !repairs.running.is_empty() => {
                    repairs.finished(done);
                }
                Some(outcome) = reconcile.join_next() => break Some(outcome),
            }
        };
        let Some(outcome) = outcome else {
            continue;
        };
        inner.metrics.reconcile_ended(match &outcome {
            Ok(outcome) => ended(outcome),
            Err(_) => "failed",
        });
        let deployed = current.get();
        if let (Ok(Ok(_)), Some(context)) = (&outcome, deployed) {
            inner.reconciled(&key, &context);
        }
        let pause = match outcome {
            Ok(Ok(Settled::Idle)) => None,
            Ok(Ok(Settled::Resync)) => {
                retries = None;
                Some(inner.resync_pause())
            }
            failed => {
                match failed {
                    Ok(Err(error)) => tracing::error!(target = %key, %error, "reconcile failed"),
                    Err(panic) => tracing::error!(target = %key, %panic, "reconcile panicked"),
                    Ok(Ok(_)) => {}
                }
                let retries = retries.get_or_insert_with(|| inner.backoff());
                retries.next()
            }
        };
        let wake = tokio::time::sleep(pause.unwrap_or(Duration::MAX));
        tokio::pin!(wake);
        let changed = loop {
            tokio::select! {
                changed = nudged.changed() => break changed,
                () = soon.notified() => break Ok(()),
                () = &mut wake, if pause.is_some() => break Ok(()),
                Some(drifted) = drifts.recv() => repairs.start(drifted),
                Some(done) = repairs.running.join_next(), if !repairs.running.is_empty() => {
                    repairs.finished(done);
                }
            }
        };
        drop((inner, repairs));
        if changed.is_err() {
            return;
        }
    }
}

/// One object of a target on one cluster.
type ObjectId = (ClusterRef, String, String, Option<String>, String);

impl Drifted {
    fn object(&self) -> ObjectId {
        (
            self.cluster.clone(),
            self.api_version.clone(),
            self.kind.clone(),
            self.change.namespace.clone(),
            self.change.name.clone(),
        )
    }
}

/// A worker's repairs under way, one per object at a time: what a watch
/// reports of an object while it is being repaired waits for that repair,
/// and only the latest report waits, however many come.
struct Repairs {
    inner: Arc<Inner>,
    key: String,
    applied: Arc<Applied>,
    current: Arc<Current>,
    /// Asks the worker for one more reconcile.
    soon: Arc<Notify>,
    running: JoinSet<ObjectId>,
    /// The objects being repaired, with the report that came since.
    busy: HashMap<ObjectId, Option<Drifted>>,
}

impl Repairs {
    /// Starts repairing what `drifted` reports, with the revision the
    /// worker works towards; with none read yet (or nothing deployed),
    /// the next reconcile sees to it.
    fn start(&mut self, drifted: Drifted) {
        let object = drifted.object();
        if let Some(waiting) = self.busy.get_mut(&object) {
            *waiting = Some(drifted);
            return;
        }
        let context = self.current.get();
        let Some(context) = context else {
            self.soon.notify_one();
            return;
        };
        self.busy.insert(object.clone(), None);
        let (inner, key, applied, soon) = (
            self.inner.clone(),
            self.key.clone(),
            self.applied.clone(),
            self.soon.clone(),
        );
        self.running.spawn(async move {
            let repair = inner.repair(&key, &context, &applied, drifted);
            // A panic is a failed repair, and the object is free again.
            match AssertUnwindSafe(repair).catch_unwind().await {
                // Ready only later, or not done: a reconcile waits for it.
                Ok(Ok(true)) => soon.notify_one(),
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(target = %key, %error, "could not repair drift");
                    soon.notify_one();
                }
                Err(_) => {
                    tracing::error!(target = %key, "a drift repair panicked");
                    soon.notify_one();
                }
            }
            object
        });
    }

    /// Takes note of a finished repair; the report that waited for it, if
    /// any, starts now.
    fn finished(&mut self, done: Result<ObjectId, tokio::task::JoinError>) {
        let Ok(object) = done else {
            return;
        };
        if let Some(Some(next)) = self.busy.remove(&object) {
            self.start(next);
        }
    }
}
