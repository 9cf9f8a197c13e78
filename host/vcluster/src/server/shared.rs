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

    pub(super) fn publish(&self, event: Event) {
        // No watcher is not an error.
        let _ = self.events.send(event);
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
                drop(objects);
                shared.publish(event);
            }
        });
    }
    shared.publish(event);
}
