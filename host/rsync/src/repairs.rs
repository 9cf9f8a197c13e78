//! Drift repairs beside a worker's reconcile: each object a watch reports
//! is repaired at once with the revision the reconcile read, one repair
//! per object at a time.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use wasmco_store::appcontext::StoredContext;

use crate::drift::Applied;
use crate::reconcile::{self, Reconciler};
use crate::watch::{Drifted, ObjectId};

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
    pub(crate) fn begin(&self) -> u64 {
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
    pub(crate) fn get(&self) -> Option<Arc<StoredContext>> {
        self.lock().1.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<Arc<StoredContext>>)> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A worker's repairs under way, one per object at a time: what a watch
/// reports of an object while it is being repaired waits for that repair,
/// and only the latest report waits, however many come.
pub(crate) struct Repairs {
    reconciler: Arc<Reconciler>,
    key: String,
    applied: Arc<Applied>,
    current: Arc<Current>,
    /// Asks the worker for one more reconcile.
    soon: Arc<Notify>,
    pub(crate) running: JoinSet<ObjectId>,
    /// The objects being repaired, with the report that came since.
    busy: HashMap<ObjectId, Option<Drifted>>,
}

impl Repairs {
    pub(crate) fn new(
        reconciler: Arc<Reconciler>,
        key: &str,
        applied: &Arc<Applied>,
        current: &Arc<Current>,
        soon: &Arc<Notify>,
    ) -> Self {
        Repairs {
            reconciler,
            key: key.to_owned(),
            applied: applied.clone(),
            current: current.clone(),
            soon: soon.clone(),
            running: JoinSet::new(),
            busy: HashMap::new(),
        }
    }

    /// Starts repairing what `drifted` reports, with the revision the
    /// worker works towards; with none read yet (or nothing deployed),
    /// the next reconcile sees to it.
    pub(crate) fn start(&mut self, drifted: Drifted) {
        let object = drifted.object();
        if let Some(waiting) = self.busy.get_mut(&object) {
            *waiting = Some(drifted);
            return;
        }
        let context = self.current.get();
        let Some(context) = context else {
            // A status moving is nothing to reconcile for.
            if !drifted.change.status_only {
                self.soon.notify_one();
            }
            return;
        };
        self.busy.insert(object.clone(), None);
        let (reconciler, key, applied, soon) = (
            self.reconciler.clone(),
            self.key.clone(),
            self.applied.clone(),
            self.soon.clone(),
        );
        self.running.spawn(async move {
            let repair = reconcile::repair(&reconciler, &key, &context, &applied, drifted);
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
    pub(crate) fn finished(&mut self, done: Result<ObjectId, tokio::task::JoinError>) {
        let Ok(object) = done else {
            return;
        };
        if let Some(Some(next)) = self.busy.remove(&object) {
            self.start(next);
        }
    }
}
