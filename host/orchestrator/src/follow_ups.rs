//! Hearing rsync's finished reconciles, to make the services of the DIGs
//! that ask for it known (see [`crate::service_discovery`]) once the
//! clusters hold what the servers serve.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak, mpsc};

use wasmco_store::appcontext::{ReconcileListener, StoredContext};

use crate::orchestrator::Orchestrator;
use crate::target::DigRef;

/// How many DIGs' passes run at once: each asks clusters and waits.
const PASSES_AT_ONCE: usize = 2;

/// Hears rsync's finished reconciles and makes the services of the DIGs
/// that ask for it known: off rsync's workers, on a few threads of its
/// own, one pass per DIG at a time (another reconcile ending during a pass
/// makes one more).
pub struct FollowUps {
    /// DIGs to work on; the threads end when it is dropped.
    queue: Mutex<mpsc::Sender<DigRef>>,
    /// The DIGs queued or being worked on, and whether another reconcile
    /// ended since the pass began.
    busy: Arc<Mutex<HashMap<String, bool>>>,
}

impl FollowUps {
    /// Listening to `orchestrator`'s sync engine for as long as the
    /// returned value is kept.
    pub fn start(orchestrator: &Orchestrator) -> Arc<FollowUps> {
        let (queue, queued) = mpsc::channel::<DigRef>();
        let queued = Arc::new(Mutex::new(queued));
        let busy: Arc<Mutex<HashMap<String, bool>>> = Arc::default();
        for _ in 0..PASSES_AT_ONCE {
            let (orchestrator, queued, busy) = (orchestrator.clone(), queued.clone(), busy.clone());
            std::thread::spawn(move || {
                loop {
                    let next = queued.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok(dig) = next else {
                        return;
                    };
                    passes(&orchestrator, &busy, &dig);
                }
            });
        }
        let follow_ups = Arc::new(FollowUps {
            queue: Mutex::new(queue),
            busy,
        });
        let listener: Weak<dyn ReconcileListener> = Arc::downgrade(&follow_ups) as _;
        orchestrator.listen(listener);
        follow_ups
    }
}

/// Runs `dig`'s passes until no reconcile ended during the last one; a
/// pass that panics is a failed pass, and the DIG is free again.
fn passes(orchestrator: &Orchestrator, busy: &Mutex<HashMap<String, bool>>, dig: &DigRef) {
    let key = dig.key();
    loop {
        let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            orchestrator.mirror_services(dig)
        }));
        match pass {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(dig = %key, %error, "could not make the services known");
            }
            Err(_) => tracing::error!(dig = %key, "making the services known panicked"),
        }
        let mut busy = busy.lock().unwrap_or_else(|p| p.into_inner());
        match busy.get_mut(&key) {
            Some(again) if *again => *again = false,
            _ => {
                busy.remove(&key);
                return;
            }
        }
    }
}

impl ReconcileListener for FollowUps {
    fn reconciled(&self, _key: &str, context: &StoredContext) {
        if context.meta.service_mirrors.is_empty() {
            return;
        }
        let meta = &context.meta;
        let dig = DigRef::of_context(meta);
        {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(again) = busy.get_mut(&dig.key()) {
                *again = true;
                return;
            }
            busy.insert(dig.key(), false);
        }
        // The threads end only with the sender: a send cannot fail here.
        let _ = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(dig);
    }
}
