//! One worker per target, each reconciling towards its target's latest
//! desired state; hand-offs only nudge it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use backon::BackoffBuilder;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use crate::Inner;
use crate::drift::Applied;

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
    /// Reconcile once more when done (something drifted): a stored permit,
    /// so any number of asks before then make one reconcile.
    soon: Arc<Notify>,
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
        let soon = Arc::new(Notify::new());
        signals.insert(
            key.to_owned(),
            Signals {
                nudge,
                soon: soon.clone(),
            },
        );
        drop(signals);
        self.workers
            .by_label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(crate::label_value(key), key.to_owned());
        let mut tasks = self.workers.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Reap the workers that ended (only a panic ends one early).
        while let Some(ended) = tasks.try_join_next() {
            if let Err(error) = ended {
                tracing::error!(%error, "an rsync worker ended");
            }
        }
        tasks.spawn_on(
            work(Arc::downgrade(self), key.to_owned(), nudged, soon),
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
    /// Asks the worker of the target whose objects carry DIG label value
    /// `label` for one more reconcile, without stopping the one under way.
    pub(crate) fn resync_soon(&self, label: &str) {
        let key = self
            .workers
            .by_label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(label)
            .cloned();
        let Some(key) = key else {
            return;
        };
        if let Some(signals) = self
            .workers
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            signals.soon.notify_one();
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
fn ended(outcome: &Result<Settled, crate::RsyncError>) -> &'static str {
    match outcome {
        Ok(Settled::Idle) => "idle",
        Ok(Settled::Resync) => "settled",
        Ok(Settled::Incomplete) => "incomplete",
        Err(_) => "failed",
    }
}

/// The worker of `key`. It holds the engine only while reconciling, and
/// ends when the engine is dropped (its nudge sender goes with it).
async fn work(
    engine: Weak<Inner>,
    key: String,
    mut nudged: watch::Receiver<()>,
    soon: Arc<Notify>,
) {
    let mut retries: Option<backon::ExponentialBackoff> = None;
    let applied = Arc::new(Applied::default());
    loop {
        nudged.borrow_and_update();
        let Some(inner) = engine.upgrade() else {
            return;
        };
        // A task of its own, so that a panic in it is a failed reconcile
        // rather than the end of this worker; dropping the set aborts it.
        let mut reconcile = JoinSet::new();
        reconcile.spawn({
            let (inner, key, applied) = (inner.clone(), key.clone(), applied.clone());
            // Its logs carry the target, which a DIG action's span names too.
            let span = tracing::info_span!("reconcile", target = %key);
            tracing::Instrument::instrument(
                async move {
                    let outcome = inner.reconcile(&key, &applied).await;
                    tracing::info!(outcome = ended(&outcome), "reconcile ended");
                    outcome
                },
                span,
            )
        });
        inner.metrics.reconcile_started();
        let outcome = tokio::select! {
            // Superseded: start again from the latest state.
            changed = nudged.changed() => {
                inner.metrics.reconcile_ended("superseded");
                if changed.is_err() {
                    return;
                }
                tracing::debug!(target = %key, "reconcile superseded");
                continue;
            }
            Some(outcome) = reconcile.join_next() => outcome,
        };
        inner.metrics.reconcile_ended(match &outcome {
            Ok(outcome) => ended(outcome),
            Err(_) => "failed",
        });
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
        drop(inner);
        let changed = match pause {
            Some(pause) => tokio::select! {
                changed = nudged.changed() => changed,
                () = soon.notified() => Ok(()),
                () = tokio::time::sleep(pause) => Ok(()),
            },
            None => tokio::select! {
                changed = nudged.changed() => changed,
                () = soon.notified() => Ok(()),
            },
        };
        if changed.is_err() {
            return;
        }
    }
}
