//! Applying one resource on one cluster: only when the cluster does not
//! hold it as applied, noticing and repairing drift on the way; and the
//! repair of one object a watch saw drift.

use serde_json::Value;

use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{Deployed, Drift, DriftKind, Readiness, ResourceStatus, now};

use super::claim::{Claim, Refusal};
use super::cluster::ClusterWork;
use crate::drift::{self, Fingerprint};
use crate::error::RsyncError;
use crate::owner::{self, field_manager, labels};
use crate::target::{self, ApplyAs, Labels, SyncError};

/// What became of one resource in a sync.
pub(super) struct Synced {
    pub(super) status: ResourceStatus,
    /// Applied in this sync (not found as applied).
    pub(super) applied: bool,
    /// As the cluster holds it, when known.
    pub(super) live: Option<Value>,
    /// Failed in a way worth trying again.
    pub(super) transient: bool,
}

impl ClusterWork {
    /// Repairs `resource` of `app` when a watch saw it changed or deleted
    /// (`live` is what it saw, `None` for a deletion), without waiting for
    /// anything else of the app; whether it now needs a reconcile to wait
    /// for it to be ready.
    pub(super) async fn repair(
        &self,
        app: &str,
        resource: &Resource,
        live: Option<Value>,
        status_only: bool,
    ) -> Result<bool, RsyncError> {
        let labels = labels(&self.key, Some(app));
        let live = live
            .and_then(|live| Resource::from_manifest(live).ok())
            .filter(|live| self.same_place(resource, live));
        if let Some(live) = &live {
            let holds = self.holds_as_applied(app, resource, &labels, live);
            if holds {
                // Our own write, or a change to fields rsync does not set; a
                // status saying it is no longer ready is recorded, though.
                self.note_unready(app, resource, live).await?;
                return Ok(false);
            }
            if status_only {
                // rsync's write of another revision (an update under way)
                // whose status moved: the reconcile sees to it, in its order.
                return Ok(false);
            }
        }
        let mut recorded = self.recorded(app).await?;
        let key = resource.key.to_string();
        let synced = self
            .sync_resource(app, resource, &labels, live.as_ref(), recorded.get(&key))
            .await;
        let mut status = synced.status.clone();
        if status.deployed == Deployed::Applied && ready_now(resource, &synced) {
            status.ready = Readiness::Ready;
        }
        let waits = status.deployed == Deployed::Applied && status.ready != Readiness::Ready;
        self.record(app, &mut recorded, &[(key, status)]).await?;
        self.applied.repaired();
        Ok(waits || synced.transient)
    }

    /// When `live` says `resource` is not ready: records it NotReady if its
    /// status still says Ready, and makes the next resync read the app
    /// here again, which records it Ready once it is (a reconcile under
    /// way may record an older Ready meanwhile).
    async fn note_unready(
        &self,
        app: &str,
        resource: &Resource,
        live: &Resource,
    ) -> Result<(), RsyncError> {
        let kind = &resource.key.kind;
        if target::ready_once_applied(kind) || target::is_ready(kind, &live.manifest) {
            return Ok(());
        }
        self.applied.forget_look(&self.cluster, app);
        let mut recorded = self.recorded(app).await?;
        let key = resource.key.to_string();
        let Some(was_ready) = recorded.get(&key).filter(|s| s.ready == Readiness::Ready) else {
            return Ok(());
        };
        // The event may be older than the Ready a reconcile read since (a
        // workload's first events come while it is polled): ask the cluster.
        let unready_now = match self.target().await {
            Ok(target) => matches!(target.ready(resource).await, Ok(false)),
            Err(_) => false,
        };
        if !unready_now {
            return Ok(());
        }
        let unready = ResourceStatus {
            ready: Readiness::NotReady,
            ..was_ready.clone()
        };
        self.record(app, &mut recorded, &[(key, unready)]).await
    }

    /// Whether `live` holds what this target applies for `resource`, as
    /// far as it knows without asking the cluster.
    fn holds_as_applied(
        &self,
        app: &str,
        resource: &Resource,
        labels: &Labels,
        live: &Resource,
    ) -> bool {
        let desired = owner::stamped(
            &resource.manifest,
            labels,
            &self.key,
            self.adopted(&live.manifest),
        );
        match self
            .applied
            .get(&self.cluster, app, &resource.key.to_string())
            .filter(|known| known.applies(&desired))
        {
            Some(known) => known.holds(&desired, &live.manifest),
            None => drift::matches(&desired, &live.manifest),
        }
    }

    /// Applies `resource` unless the cluster holds it as applied; notices
    /// and repairs drift. `live` is this target's object under that name,
    /// if its labels found one; anything else under that name is taken
    /// only when nobody in wasmco owns it and the resource asks to.
    pub(super) async fn sync_resource(
        &self,
        app: &str,
        resource: &Resource,
        labels: &Labels,
        live: Option<&Resource>,
        before: Option<&ResourceStatus>,
    ) -> Synced {
        let kept_drift = before.and_then(|b| b.drift.clone());
        if let Err(refused) = self.within_confinement(resource).await {
            return Synced::refused(resource, refused, kept_drift);
        }
        let claimed;
        let (live, adopting) = match live {
            Some(live) => (Some(live), false),
            None => match self.claim(resource).await {
                Ok(Claim::Free) => (None, false),
                Ok(Claim::Ours(object)) => {
                    claimed = object;
                    (Some(&claimed), false)
                }
                Ok(Claim::Adopt(object)) => {
                    claimed = object;
                    (Some(&claimed), true)
                }
                Err(refused) => return Synced::refused(resource, refused, kept_drift),
            },
        };
        let adopted = adopting || live.is_some_and(|l| self.adopted(&l.manifest));
        let desired = Desired {
            app,
            resource,
            key: resource.key.to_string(),
            manifest: owner::stamped(&resource.manifest, labels, &self.key, adopted),
        };
        // What this revision applies was applied before: a difference on
        // the cluster is drift. Otherwise (a new revision, or the first
        // look after a start) the manifest itself is the measure.
        let known = self
            .applied
            .get(&self.cluster, app, &desired.key)
            .filter(|known| known.applies(&desired.manifest));
        let unchanged = live.is_some_and(|live| match &known {
            Some(known) => known.holds(&desired.manifest, &live.manifest),
            None => drift::matches(&desired.manifest, &live.manifest),
        });
        if let (true, Some(live)) = (unchanged, live) {
            return self.unchanged(&desired, live, known.is_none(), kept_drift);
        }
        let drifted = known.map(|_| match live {
            None => DriftKind::Deleted,
            Some(_) => DriftKind::Changed,
        });
        if let Some(kind) = drifted {
            tracing::info!(target = %self.key, cluster = %self.cluster, object = %desired.key, ?kind, "drift found; repairing");
        }
        self.apply_desired(&desired, live.is_some(), drifted, kept_drift)
            .await
    }

    /// The cluster holds `desired` as `live`: nothing to apply. Seen so for
    /// the first time, what it holds is noted as what was applied.
    fn unchanged(
        &self,
        desired: &Desired<'_>,
        live: &Resource,
        first_look: bool,
        kept_drift: Option<Drift>,
    ) -> Synced {
        if first_look {
            let fingerprint = Fingerprint::of(&desired.manifest, &live.manifest);
            self.applied
                .set(&self.cluster, desired.app, &desired.key, fingerprint);
        }
        let mut status = ResourceStatus::applied(desired.resource);
        status.drift = kept_drift;
        Synced {
            status,
            applied: false,
            live: Some(live.manifest.clone()),
            transient: false,
        }
    }

    /// Applies `desired`. With `force` (ours, or adopted now) it takes back
    /// what someone changed; without (a new object), a conflict means
    /// someone made it since it was looked at.
    async fn apply_desired(
        &self,
        desired: &Desired<'_>,
        force: bool,
        drifted: Option<DriftKind>,
        kept_drift: Option<Drift>,
    ) -> Synced {
        let manager = field_manager(&self.key);
        let how = ApplyAs {
            manager: &manager,
            force,
        };
        let (resource, manifest) = (desired.resource, &desired.manifest);
        let started = std::time::Instant::now();
        let outcome = self
            .with_retries(|target| async move { target.apply(resource, manifest, how).await })
            .await;
        self.reconciler
            .metrics
            .applied_in(&self.cluster, started.elapsed().as_secs_f64());
        if outcome.is_ok() && drifted.is_some() {
            self.reconciler.metrics.drift_repaired();
        }
        let detected = drifted.map(|kind| Drift {
            kind,
            detected: now(),
            repaired: None,
        });
        match outcome {
            Ok(held) => {
                let fingerprint = Fingerprint::of(manifest, &held);
                self.applied
                    .set(&self.cluster, desired.app, &desired.key, fingerprint);
                let mut status = ResourceStatus::applied(resource);
                status.drift = match detected {
                    Some(drift) => Some(Drift {
                        repaired: Some(now()),
                        ..drift
                    }),
                    None => kept_drift,
                };
                Synced {
                    status,
                    applied: true,
                    live: Some(held),
                    transient: false,
                }
            }
            Err(error) => {
                let transient = error.is_transient();
                let message = match error {
                    SyncError::Refused { code: 409, .. } if !how.force => {
                        self.conflict(resource, error).await
                    }
                    error => error.to_string(),
                };
                let mut status = ResourceStatus::failed(resource, message);
                status.drift = detected.or(kept_drift);
                Synced {
                    status,
                    applied: false,
                    live: None,
                    transient,
                }
            }
        }
    }
}

/// What a sync applies for one resource of an app.
struct Desired<'r> {
    app: &'r str,
    resource: &'r Resource,
    /// Its `name+Kind`.
    key: String,
    /// Its manifest, with this target's marks.
    manifest: Value,
}

impl Synced {
    /// `resource` not applied, for `refusal`; its last drift kept.
    pub(super) fn refused(resource: &Resource, refusal: Refusal, drift: Option<Drift>) -> Self {
        let mut status = ResourceStatus::failed(resource, refusal.message);
        status.drift = drift;
        Synced {
            status,
            applied: false,
            live: None,
            transient: refusal.transient,
        }
    }
}

/// Whether `resource` is ready by what its sync saw, without waiting.
pub(super) fn ready_now(resource: &Resource, synced: &Synced) -> bool {
    target::ready_once_applied(&resource.key.kind)
        || synced
            .live
            .as_ref()
            .is_some_and(|live| target::is_ready(&resource.key.kind, live))
}
