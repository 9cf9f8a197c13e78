//! One worker per target, each reconciling towards its target's latest
//! desired state; hand-offs only nudge it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};
use tokio::task::{JoinError, JoinSet};

use wasmco_store::appcontext::{ReconcileListener, StoredContext};

use crate::drift::Applied;
use crate::error::RsyncError;
use crate::reconcile::{self, Look, Reconciler, Settled};
use crate::repairs::{Current, Repairs};
use crate::watch::Drifted;

/// How a worker is told to work.
struct Signals {
    /// Start again from the latest state, now.
    nudge: watch::Sender<()>,
    /// Objects a watch saw drift, repaired at once.
    drifts: mpsc::UnboundedSender<Drifted>,
}

/// Who hears of each finished reconcile of a deployed target.
#[derive(Default)]
pub(crate) struct Listeners(Mutex<Vec<Weak<dyn ReconcileListener>>>);

impl Listeners {
    /// Adds `listener`, dropping those gone.
    pub(crate) fn add(&self, listener: Weak<dyn ReconcileListener>) {
        let mut listeners = self.0.lock().unwrap_or_else(|p| p.into_inner());
        listeners.retain(|l| l.strong_count() > 0);
        listeners.push(listener);
    }

    /// Tells the listeners that a reconcile deploying `context` ended.
    fn reconciled(&self, key: &str, context: &StoredContext) {
        let listeners: Vec<_> = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for listener in listeners {
            listener.reconciled(key, context);
        }
    }
}

/// The workers, by target key.
pub(crate) struct Workers {
    runtime: tokio::runtime::Handle,
    /// What the workers reconcile with; gone with the engine.
    reconciler: Weak<Reconciler>,
    listeners: Arc<Listeners>,
    signals: Mutex<HashMap<String, Signals>>,
    /// Target keys by the DIG label value their objects carry.
    by_label: Mutex<HashMap<String, String>>,
    /// Dropped with the engine, which aborts every worker.
    tasks: Mutex<JoinSet<()>>,
}

impl Workers {
    pub(crate) fn new(runtime: tokio::runtime::Handle, reconciler: Weak<Reconciler>) -> Self {
        Workers {
            runtime,
            reconciler,
            listeners: Arc::default(),
            signals: Mutex::default(),
            by_label: Mutex::default(),
            tasks: Mutex::default(),
        }
    }

    /// Who hears of each finished reconcile.
    pub(crate) fn listeners(&self) -> &Listeners {
        &self.listeners
    }

    /// Makes `key`'s worker (started on first use) reconcile again from
    /// the latest state, stopping the reconcile it is in.
    pub(crate) fn nudge(&self, key: &str) {
        let mut signals = self.signals();
        if let Some(existing) = signals.get(key) {
            existing.nudge.send_replace(());
            return;
        }
        let (nudge, nudged) = watch::channel(());
        let (drifts, drifted) = mpsc::unbounded_channel();
        signals.insert(key.to_owned(), Signals { nudge, drifts });
        drop(signals);
        self.by_label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(crate::owner::owner_label(key), key.to_owned());
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Reap the workers that ended (only a panic ends one early).
        while let Some(ended) = tasks.try_join_next() {
            if let Err(error) = ended {
                tracing::error!(%error, "an rsync worker ended");
            }
        }
        let worker = Worker::new(
            self.reconciler.clone(),
            self.listeners.clone(),
            key,
            nudged,
            drifted,
        );
        tasks.spawn_on(worker.run(), &self.runtime);
    }

    /// Hands an object a watch saw drift to the worker of the target whose
    /// label it carries, which repairs it at once.
    pub(crate) fn drifted(&self, drifted: Drifted) {
        let key = self
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
        if let Some(signals) = self.signals().get(&key) {
            // The worker ends only with its sender: a send cannot fail here.
            let _ = signals.drifts.send(drifted);
        }
    }

    /// Nudges every worker: a cluster came back.
    pub(crate) fn nudge_all(&self) {
        for signals in self.signals().values() {
            signals.nudge.send_replace(());
        }
    }

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

/// How a reconcile ended, in a word.
fn ended(outcome: &Result<Settled, RsyncError>) -> &'static str {
    match outcome {
        Ok(Settled::Idle) => "idle",
        Ok(Settled::Resync) => "settled",
        Ok(Settled::Incomplete) => "incomplete",
        Err(_) => "failed",
    }
}

/// A reconcile run as a task of its own: a panic in it is its failure.
type Finished = Result<Result<Settled, RsyncError>, JoinError>;

/// What became of a reconcile the worker followed.
enum Followed {
    Finished(Finished),
    /// A nudge came: start again from the latest state.
    Superseded,
    /// The worker was stopped (or the engine dropped).
    Stopped,
}

/// The worker of one target. It holds the reconciler only while
/// reconciling, and ends when the engine is dropped (its nudge sender goes
/// with it).
///
/// Drift a watch reports is repaired beside the reconcile, at once, with
/// the revision the reconcile read: not after it, since a reconcile may
/// wait a long time for a workload to become ready.
struct Worker {
    reconciler: Weak<Reconciler>,
    listeners: Arc<Listeners>,
    key: String,
    nudged: watch::Receiver<()>,
    drifts: mpsc::UnboundedReceiver<Drifted>,
    /// Reconcile once more when done (a repaired object to wait for): a
    /// stored permit, so any number of asks before then make one reconcile.
    soon: Arc<Notify>,
    retries: Option<backon::ExponentialBackoff>,
    /// How closely the next reconcile looks.
    next_look: Look,
    /// Resyncs since the last reconcile that read everything.
    resyncs_in_a_row: u32,
    applied: Arc<Applied>,
    current: Arc<Current>,
}

impl Worker {
    fn new(
        reconciler: Weak<Reconciler>,
        listeners: Arc<Listeners>,
        key: &str,
        nudged: watch::Receiver<()>,
        drifts: mpsc::UnboundedReceiver<Drifted>,
    ) -> Self {
        Worker {
            reconciler,
            listeners,
            key: key.to_owned(),
            nudged,
            drifts,
            soon: Arc::new(Notify::new()),
            retries: None,
            next_look: Look::Full,
            resyncs_in_a_row: 0,
            applied: Arc::default(),
            current: Arc::default(),
        }
    }

    async fn run(mut self) {
        loop {
            self.nudged.borrow_and_update();
            let Some(reconciler) = self.reconciler.upgrade() else {
                return;
            };
            // Until the reconcile has read the state, a repair has no
            // revision to go by: the one read last may be what a terminate
            // just ended.
            let generation = self.current.begin();
            let mut repairs = Repairs::new(
                reconciler.clone(),
                &self.key,
                &self.applied,
                &self.current,
                &self.soon,
            );
            let look = std::mem::take(&mut self.next_look);
            let mut reconcile = self.spawn_reconcile(&reconciler, generation, look);
            reconciler.metrics.reconcile_started();
            let outcome = match self.follow(&reconciler, &mut reconcile, &mut repairs).await {
                Followed::Finished(outcome) => outcome,
                Followed::Superseded => continue,
                Followed::Stopped => return,
            };
            let pause = self.settle(&reconciler, outcome, look);
            let changed = self.rest(pause, &mut repairs).await;
            drop((reconciler, repairs));
            if changed.is_err() {
                return;
            }
        }
    }

    /// Starts a reconcile in a task of its own, so that a panic in it is a
    /// failed reconcile rather than the end of this worker; dropping the
    /// set aborts it.
    fn spawn_reconcile(
        &self,
        reconciler: &Arc<Reconciler>,
        generation: u64,
        look: Look,
    ) -> JoinSet<Result<Settled, RsyncError>> {
        let mut reconcile = JoinSet::new();
        let (reconciler, key, applied, current) = (
            reconciler.clone(),
            self.key.clone(),
            self.applied.clone(),
            self.current.clone(),
        );
        // Its logs carry the target, which a DIG action's span names too.
        let span = tracing::info_span!("reconcile", target = %key);
        reconcile.spawn(tracing::Instrument::instrument(
            async move {
                let deploying = |context| current.set(generation, Some(context));
                let outcome =
                    reconcile::reconcile(&reconciler, &key, &applied, look, deploying).await;
                tracing::info!(outcome = ended(&outcome), "reconcile ended");
                outcome
            },
            span,
        ));
        reconcile
    }

    /// Repairs drift while the reconcile runs, until it finishes or a
    /// nudge supersedes it.
    async fn follow(
        &mut self,
        reconciler: &Reconciler,
        reconcile: &mut JoinSet<Result<Settled, RsyncError>>,
        repairs: &mut Repairs,
    ) -> Followed {
        loop {
            tokio::select! {
                // Superseded: start again from the latest state.
                changed = self.nudged.changed() => {
                    reconciler.metrics.reconcile_ended("superseded");
                    if changed.is_err() {
                        return Followed::Stopped;
                    }
                    tracing::debug!(target = %self.key, "reconcile superseded");
                    return Followed::Superseded;
                }
                Some(drifted) = self.drifts.recv() => repairs.start(drifted),
                Some(done) = repairs.running.join_next(), if !repairs.running.is_empty() => {
                    repairs.finished(done);
                }
                Some(outcome) = reconcile.join_next() => return Followed::Finished(outcome),
            }
        }
    }

    /// Counts and reports a finished reconcile, which looked as `look`
    /// says; how long to rest before the next (`None`: until nudged).
    fn settle(
        &mut self,
        reconciler: &Reconciler,
        outcome: Finished,
        look: Look,
    ) -> Option<Duration> {
        reconciler.metrics.reconcile_ended(match &outcome {
            Ok(outcome) => ended(outcome),
            Err(_) => "failed",
        });
        if look == Look::Full {
            reconciler.metrics.read_all();
        }
        let deployed = self.current.get();
        if let (Ok(Ok(_)), Some(context)) = (&outcome, deployed) {
            self.listeners.reconciled(&self.key, &context);
        }
        match outcome {
            Ok(Ok(Settled::Idle)) => None,
            Ok(Ok(Settled::Resync)) => {
                self.retries = None;
                self.resyncs_in_a_row = match look {
                    Look::Full => 0,
                    Look::Resync => self.resyncs_in_a_row + 1,
                };
                // Now and then a resync reads everything: a change no watch
                // reports (an edit that only removes a field leaves rsync's
                // managed-fields entry the newest) is found then.
                self.next_look = if self.resyncs_in_a_row >= READ_ALL_EVERY {
                    Look::Full
                } else {
                    Look::Resync
                };
                Some(match look {
                    // Watches it started began after it read the clusters:
                    // one more look soon, and they vouch from then on.
                    Look::Full => reconciler.config.resync.min(FOLLOW_UP),
                    Look::Resync => resync_pause(reconciler.config.resync),
                })
            }
            failed => {
                match failed {
                    Ok(Err(error)) => {
                        tracing::error!(target = %self.key, %error, "reconcile failed");
                    }
                    Err(panic) => tracing::error!(target = %self.key, %panic, "reconcile panicked"),
                    Ok(Ok(_)) => {}
                }
                let retries = self
                    .retries
                    .get_or_insert_with(|| reconciler.config.retries());
                retries.next()
            }
        }
    }

    /// Repairs drift until `pause` is over, a nudge comes, or a repair asks
    /// for a reconcile; an error when the worker was stopped.
    async fn rest(
        &mut self,
        pause: Option<Duration>,
        repairs: &mut Repairs,
    ) -> Result<(), watch::error::RecvError> {
        let wake = tokio::time::sleep(pause.unwrap_or(Duration::MAX));
        tokio::pin!(wake);
        loop {
            tokio::select! {
                changed = self.nudged.changed() => {
                    self.next_look = Look::Full;
                    return changed;
                }
                () = self.soon.notified() => {
                    self.next_look = Look::Full;
                    return Ok(());
                }
                () = &mut wake, if pause.is_some() => {
                    // The repairs under way end with this rest: what they
                    // were to put back, the next reconcile must read.
                    if !repairs.running.is_empty() {
                        self.next_look = Look::Full;
                    }
                    return Ok(());
                }
                Some(drifted) = self.drifts.recv() => repairs.start(drifted),
                Some(done) = repairs.running.join_next(), if !repairs.running.is_empty() => {
                    repairs.finished(done);
                }
            }
        }
    }
}

/// How soon a resync follows a full reconcile.
const FOLLOW_UP: Duration = Duration::from_secs(10);

/// Every how many resyncs one reads everything (every 30 minutes by default).
const READ_ALL_EVERY: u32 = 6;

/// The resync interval plus up to a tenth of it, so that targets
/// settled together do not all resync together.
fn resync_pause(resync: Duration) -> Duration {
    resync.mul_f64(1.0 + fastrand::f64() / 10.0)
}
