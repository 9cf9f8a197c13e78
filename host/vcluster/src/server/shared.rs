//! What every request of one virtual cluster shares: its objects, the
//! stream of their changes, how it behaves, and its CA.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::behaviour::{Behaviour, ready_status};
use crate::catalog::ResourceType;
use crate::objects::{Event, Objects};
use crate::signer::Signer;

/// What every request of one virtual cluster shares.
pub(crate) struct Shared {
    objects: Mutex<Objects>,
    events: broadcast::Sender<Event>,
    /// The latest events, which a watch resuming from a resourceVersion
    /// is sent first.
    history: Mutex<History>,
    address: String,
    behaviour: Mutex<Behaviour>,
    /// Made on first use: most virtual clusters never sign anything.
    signer: std::sync::OnceLock<Option<Signer>>,
    /// Requests served, all, `/version` (a health probe's) alone, and
    /// watches opened.
    pub(crate) requests: std::sync::atomic::AtomicU64,
    pub(crate) version_requests: std::sync::atomic::AtomicU64,
    pub(crate) watch_requests: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// The shared state of the cluster `name`, with the Nodes `behaviour`
    /// asks for.
    pub(crate) fn new(name: &str, address: String, behaviour: Behaviour) -> Self {
        let mut objects = Objects::default();
        if let Some(ty) = objects.find("", "v1", "nodes").cloned() {
            for node in behaviour.nodes.objects(name) {
                if let Err(error) = objects.create(&ty, "", node) {
                    tracing::warn!(%error, "virtual cluster could not add a node");
                }
            }
        }
        Shared {
            objects: Mutex::new(objects),
            events: broadcast::channel(4096).0,
            history: Mutex::default(),
            address,
            behaviour: Mutex::new(behaviour),
            signer: std::sync::OnceLock::new(),
            requests: Default::default(),
            version_requests: Default::default(),
            watch_requests: Default::default(),
        }
    }

    pub(crate) fn signer(&self) -> Option<&Signer> {
        self.signer
            .get_or_init(|| match Signer::new(&self.address) {
                Ok(signer) => Some(signer),
                Err(error) => {
                    tracing::error!(%error, "virtual cluster could not make its CA");
                    None
                }
            })
            .as_ref()
    }

    pub(crate) fn behaviour(&self) -> MutexGuard<'_, Behaviour> {
        self.behaviour.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn objects(&self) -> MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `/api` answers as the address clients reach the cluster by.
    pub(super) fn address(&self) -> &str {
        &self.address
    }

    /// Every write's event from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Publishes a write's event; called with the objects locked, so that
    /// events go out in the order of their versions, as a real server's do.
    pub(super) fn publish(&self, event: Event) {
        self.history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keep(&event);
        // No watcher is not an error.
        let _ = self.events.send(event);
    }

    /// The events since `revision` that `wanted` picks, and the latest
    /// version (every event up to it is among them or not wanted); `None`
    /// when some were dropped (a watch from there would miss them), or
    /// when it is a version this cluster never made (it restarted empty).
    pub(super) fn events_since(
        &self,
        revision: u64,
        wanted: impl Fn(&Event) -> bool,
    ) -> Option<(Vec<Event>, u64)> {
        // Held throughout: events are published under it.
        let objects = self.objects();
        if revision > objects.revision() {
            return None;
        }
        let history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        let events = history.since(revision, wanted)?;
        Some((events, objects.revision()))
    }
}

/// How many events are kept for watches that resume: as a real API
/// server's history, it is bounded, and a watch from before it lists again.
const HISTORY: usize = 256;

/// The latest events.
#[derive(Default)]
struct History {
    events: std::collections::VecDeque<Event>,
    /// The latest revision of the events dropped.
    dropped_up_to: u64,
}

impl History {
    fn keep(&mut self, event: &Event) {
        if self.events.len() == HISTORY
            && let Some(dropped) = self.events.pop_front()
        {
            self.dropped_up_to = self.dropped_up_to.max(dropped.revision);
        }
        self.events.push_back(event.clone());
    }

    fn since(&self, revision: u64, wanted: impl Fn(&Event) -> bool) -> Option<Vec<Event>> {
        (revision >= self.dropped_up_to).then(|| {
            self.events
                .iter()
                .filter(|e| e.revision > revision && wanted(e))
                .cloned()
                .collect()
        })
    }
}

/// Publishes a write's event and, for a workload created or changed, makes
/// it ready after the configured delay (if it has not changed again by then).
pub(super) fn record(shared: &Arc<Shared>, ty: &ResourceType, event: Event) {
    let becomes_ready = event.kind != "DELETED" && ready_status(&event.object).is_some();
    if becomes_ready {
        let shared = shared.clone();
        let ty = ty.clone();
        let object = event.object.clone();
        let delay = shared.behaviour().ready_after;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let meta = &object["metadata"];
            let (namespace, name) = (
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap_or(""),
            );
            let mut objects = shared.objects();
            let Ok(current) = objects.get(&ty, namespace, name) else {
                return;
            };
            if current["metadata"]["generation"] != meta["generation"] {
                return;
            }
            let Some(status) = ready_status(&current) else {
                return;
            };
            if let Ok((_, event)) = objects.set_status(&ty, namespace, name, status) {
                shared.publish(event);
            }
        });
    }
    shared.publish(event);
}
