//! Applying an app's resources on one cluster: only what is missing or
//! drifted, refusing what someone else owns, then waiting for readiness.

use std::collections::HashMap;

use futures_util::StreamExt;
use futures_util::future::Either;
use futures_util::stream::FuturesOrdered;
use serde_json::Value;

use wasmco_core::cloud::CSR_KIND;
use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::Resource;
use wasmco_core::tenancy::{group_of, is_cluster_scoped};
use wasmco_store::appcontext::{
    Deployed, Drift, DriftKind, Readiness, ResourceStatus, kind_rank, now,
};

use super::{ClusterWork, Outcome};
use crate::drift::{self, Fingerprint};
use crate::engine::RsyncError;
use crate::owner::{self, FORCE_ANNOTATION, Holder, field_manager, labels};
use crate::target::{self, ApplyAs, Labels, SyncError};
use crate::worker::Settled;

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
    /// Makes the cluster hold `app`'s resources, then waits (bounded) for
    /// them to be ready, recording status as it goes.
    pub(super) async fn sync(self, app: usize) -> Result<Outcome, RsyncError> {
        let _permit = self.inner.cluster_slot().await;
        let context = self.context.clone();
        let app = &context.apps[app];
        let mut resources = app.resources_on(&self.cluster);
        // CRDs, then namespaces, then the rest (a cluster's own additions
        // come after the base, whatever their kind).
        resources.sort_by_key(|r| kind_rank(r));
        let labels = labels(&self.key, Some(&app.name));
        let mut recorded = self.recorded(&app.name).await?;
        // A chart's pre-install hooks finish before its first apply here.
        if let Err(failed) = self.run_hooks(app, HookEvent::PreInstall).await? {
            let statuses: Vec<_> = resources
                .iter()
                .map(|r| {
                    let waiting = format!("waiting for the app's hooks: {}", failed.message);
                    (r.key.to_string(), ResourceStatus::failed(r, waiting))
                })
                .collect();
            self.record(&app.name, &mut recorded, &statuses).await?;
            return Ok(Outcome {
                settled: Settled::Incomplete,
                applied: 0,
            });
        }
        let kinds = resources
            .iter()
            .map(|r| (r.api_version.clone(), r.key.kind.clone()))
            .collect();
        let listed = match &self.context.meta.adopt_from {
            None => self.list(&kinds, &labels).await,
            // A migrate: the source DIG's objects are ours to take over.
            Some(source) => match self.list(&kinds, &labels).await {
                Ok(mut live) => self
                    .list(&kinds, &owner::labels(source, Some(&app.name)))
                    .await
                    .map(|adopted| {
                        for (key, object) in adopted {
                            live.entry(key).or_insert(object);
                        }
                        live
                    }),
                Err(error) => Err(error),
            },
        };
        let live = match listed {
            Ok(live) => live,
            Err(error) => {
                let statuses: Vec<_> = resources
                    .iter()
                    .map(|r| {
                        (
                            r.key.to_string(),
                            ResourceStatus::failed(r, error.to_string()),
                        )
                    })
                    .collect();
                self.record(&app.name, &mut recorded, &statuses).await?;
                return Ok(Outcome {
                    settled: Settled::Incomplete,
                    applied: 0,
                });
            }
        };
        let mut settled = Settled::Resync;
        let mut results: Vec<(String, Synced)> = Vec::with_capacity(resources.len());
        // The app's namespaces that were not made (someone else's, say),
        // and why: nothing of the app goes into them.
        let mut not_made: HashMap<String, (String, bool)> = HashMap::new();
        // Each rank in turn; within one, several applies at once (an API
        // server serves concurrent requests faster than one stream).
        for wave in resources.chunk_by(|a, b| kind_rank(a) == kind_rank(b)) {
            let mut waiting = wave.iter();
            let mut in_flight = FuturesOrdered::new();
            let mut synced = Vec::with_capacity(wave.len());
            loop {
                while in_flight.len() < self.inner.config.parallel_applies.max(1) {
                    let Some(resource) = waiting.next() else {
                        break;
                    };
                    let key = resource.key.to_string();
                    let before = recorded.get(&key);
                    let inside = self.namespace_of(resource).and_then(|n| not_made.get(n));
                    if let Some((why, transient)) = inside {
                        let refused = Refusal {
                            message: format!(
                                "its namespace {} was not made: {why}",
                                self.namespace_of(resource).unwrap_or_default()
                            ),
                            transient: *transient,
                        };
                        let kept_drift = before.and_then(|b| b.drift.clone());
                        let synced = Synced::refused(resource, refused, kept_drift);
                        in_flight.push_back(Either::Left(std::future::ready(synced)));
                        continue;
                    }
                    in_flight.push_back(Either::Right(self.sync_resource(
                        &app.name,
                        resource,
                        &labels,
                        live.get(&key).filter(|l| self.same_place(resource, l)),
                        before,
                    )));
                }
                match in_flight.next().await {
                    Some(done) => synced.push(done),
                    None => break,
                }
            }
            for (resource, synced) in wave.iter().zip(synced) {
                if synced.transient {
                    settled = Settled::Incomplete;
                }
                if resource.key.kind == "Namespace"
                    && resource.api_version == "v1"
                    && synced.status.deployed == Deployed::Failed
                {
                    let why = synced.status.message.clone().unwrap_or_default();
                    not_made.insert(resource.key.name.clone(), (why, synced.transient));
                }
                if synced.status.deployed == Deployed::Failed {
                    self.inner.metrics.object("failed");
                } else if synced.applied {
                    self.inner.metrics.object("applied");
                }
                // What follows a CRD may be of its kind: wait until it is Established.
                if resource.key.kind == "CustomResourceDefinition"
                    && synced.status.deployed == Deployed::Applied
                    && synced.applied
                {
                    self.wait_ready(resource).await;
                }
                results.push((resource.key.to_string(), synced));
            }
        }
        // Requests for certificates: approved here, as EMCO's rsync does.
        for (resource, (_, synced)) in resources.iter().zip(&mut results) {
            if self.approves(resource)
                && synced.status.deployed == Deployed::Applied
                && let Err(message) = self.approve(resource).await
            {
                synced.status = ResourceStatus::failed(resource, message);
            }
        }
        // Watched from now on: started after the applies, so the watch
        // does not carry their events.
        for (api_version, kind) in &kinds {
            self.inner.watch(&self.cluster, api_version, kind);
        }
        // Progress first: what was applied (or failed) is there (or not);
        // readiness may take a while.
        let progress: Vec<(String, ResourceStatus)> = results
            .iter()
            .filter(|(_, s)| s.applied || s.status.deployed != Deployed::Applied)
            .map(|(key, synced)| (key.clone(), synced.status.clone()))
            .collect();
        self.record(&app.name, &mut recorded, &progress).await?;
        let mut statuses: Vec<(String, ResourceStatus)> = results
            .iter()
            .map(|(key, synced)| (key.clone(), synced.status.clone()))
            .collect();
        // What is ready now is recorded so before anything is waited for:
        // a workload that takes its time does not hide the rest.
        for ((resource, (_, synced)), (_, status)) in
            resources.iter().zip(&results).zip(&mut statuses)
        {
            if status.deployed == Deployed::Applied && ready_now(resource, synced) {
                status.ready = Readiness::Ready;
            }
        }
        self.record(&app.name, &mut recorded, &statuses).await?;
        for (resource, (key, status)) in resources.iter().zip(&mut statuses) {
            if status.deployed == Deployed::Applied
                && status.ready != Readiness::Ready
                && self.wait_ready(resource).await
            {
                status.ready = Readiness::Ready;
                self.record(&app.name, &mut recorded, &[(key.clone(), status.clone())])
                    .await?;
            }
        }
        for (resource, (_, status)) in resources.iter().zip(&statuses) {
            if self.approves(resource)
                && status.ready == Readiness::Ready
                && let Err(error) = self.keep_certificate(resource).await
            {
                tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not keep an issued certificate");
                settled = Settled::Incomplete;
            }
        }
        // Its post-install hooks once everything is ready here.
        if statuses.iter().all(|(_, s)| s.ready == Readiness::Ready)
            && let Err(failed) = self.run_hooks(app, HookEvent::PostInstall).await?
        {
            tracing::warn!(target = %self.key, cluster = %self.cluster, app = %app.name, error = %failed.message, "post-install hook failed");
            settled = Settled::Incomplete;
        }
        Ok(Outcome {
            settled,
            applied: results.iter().filter(|(_, s)| s.applied).count(),
        })
    }

    /// Repairs `resource` of `app` when a watch saw it changed or deleted
    /// (`live` is what it saw, `None` for a deletion), without waiting for
    /// anything else of the app; whether it now needs a reconcile to wait
    /// for it to be ready.
    pub(super) async fn repair(
        &self,
        app: &str,
        resource: &Resource,
        live: Option<Value>,
    ) -> Result<bool, RsyncError> {
        let labels = labels(&self.key, Some(app));
        let live = live
            .and_then(|live| Resource::from_manifest(live).ok())
            .filter(|live| self.same_place(resource, live));
        if let Some(live) = &live
            && self.holds_as_applied(app, resource, &labels, live)
        {
            // Our own write, or a change to fields rsync does not set.
            return Ok(false);
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
        let key = resource.key.to_string();
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
        let desired = owner::stamped(&resource.manifest, labels, &self.key, adopted);
        // What this revision applies was applied before: a difference on
        // the cluster is drift. Otherwise (a new revision, or the first
        // look after a start) the manifest itself is the measure.
        let known = self
            .applied
            .get(&self.cluster, app, &key)
            .filter(|known| known.applies(&desired));
        let unchanged = live.is_some_and(|live| match known {
            Some(known) => known.holds(&desired, &live.manifest),
            None => drift::matches(&desired, &live.manifest),
        });
        if let (true, Some(live)) = (unchanged, live) {
            if known.is_none() {
                let fingerprint = Fingerprint::of(&desired, &live.manifest);
                self.applied.set(&self.cluster, app, &key, fingerprint);
            }
            let mut status = ResourceStatus::applied(resource);
            status.drift = kept_drift;
            return Synced {
                status,
                applied: false,
                live: Some(live.manifest.clone()),
                transient: false,
            };
        }
        let drifted = known.map(|_| match live {
            None => DriftKind::Deleted,
            Some(_) => DriftKind::Changed,
        });
        if let Some(kind) = drifted {
            tracing::info!(target = %self.key, cluster = %self.cluster, object = %key, ?kind, "drift found; repairing");
        }
        // Ours (or adopted now): take back what someone changed. A new
        // object: a conflict means someone made it since it was looked at.
        let manager = field_manager(&self.key);
        let how = ApplyAs {
            manager: &manager,
            force: live.is_some(),
        };
        let manifest = &desired;
        let started = std::time::Instant::now();
        let outcome = self
            .with_retries(|target| async move { target.apply(resource, manifest, how).await })
            .await;
        self.inner
            .metrics
            .applied_in(&self.cluster, started.elapsed().as_secs_f64());
        if outcome.is_ok() && drifted.is_some() {
            self.inner.metrics.drift_repaired();
        }
        let detected = drifted.map(|kind| Drift {
            kind,
            detected: now(),
            repaired: None,
        });
        match outcome {
            Ok(held) => {
                let fingerprint = Fingerprint::of(&desired, &held);
                self.applied.set(&self.cluster, app, &key, fingerprint);
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

    /// The namespace `resource` goes into: its own, or the context's for
    /// a kind that is not one of Kubernetes' cluster-scoped ones.
    fn namespace_of<'r>(&'r self, resource: &'r Resource) -> Option<&'r str> {
        match &resource.namespace {
            Some(namespace) => Some(namespace),
            None if is_cluster_scoped(group_of(&resource.api_version), &resource.key.kind) => None,
            None => Some(self.context.meta.access.namespace()),
        }
    }

    /// Whether `live` sits where `resource` goes: in its namespace (the
    /// context's when the manifest names none), or in none for a
    /// cluster-scoped kind.
    fn same_place(&self, resource: &Resource, live: &Resource) -> bool {
        live.namespace.as_deref().is_none_or(|namespace| {
            namespace
                == resource
                    .namespace
                    .as_deref()
                    .unwrap_or(self.context.meta.access.namespace())
        })
    }

    /// Holds a project's resource to the rules it was checked against,
    /// now that the cluster says what scope its kind has (a custom kind
    /// may be cluster-wide).
    pub(super) async fn within_confinement(&self, resource: &Resource) -> Result<(), Refusal> {
        let Some(confined) = self
            .context
            .meta
            .confinement
            .as_ref()
            .and_then(|rules| rules.get(&self.cluster.provider))
        else {
            return Ok(());
        };
        let (api_version, kind) = (&resource.api_version, &resource.key.kind);
        let cluster_scoped = self
            .with_retries(|target| async move { target.cluster_scoped(api_version, kind).await })
            .await
            .map_err(|error| Refusal {
                transient: error.is_transient(),
                message: error.to_string(),
            })?;
        confined
            .check_scope(
                resource,
                cluster_scoped,
                self.context.meta.access.namespace(),
            )
            .map_err(|breach| Refusal {
                transient: false,
                message: breach.to_string(),
            })
    }

    /// Who holds the name `resource` would take, when its labels found
    /// no object of this target's there.
    async fn claim(&self, resource: &Resource) -> Result<Claim, Refusal> {
        let found = self
            .with_retries(|target| async move { target.get(resource).await })
            .await
            .map_err(|error| Refusal {
                transient: error.is_transient(),
                message: error.to_string(),
            })?;
        let Some(object) = found else {
            return Ok(Claim::Free);
        };
        let label = owner::owner_label(&self.key);
        let holder = owner::holder(&object, &self.key, &label);
        let object = Resource::from_manifest(object).map_err(|error| Refusal {
            transient: false,
            message: format!("the cluster's copy is not an object: {error}"),
        })?;
        match holder {
            Holder::Us => Ok(Claim::Ours(object)),
            Holder::Another(other) => Err(Refusal {
                transient: false,
                message: self.owned_elsewhere(resource, other.as_deref()),
            }),
            Holder::Nobody if self.unconfined() && owner::forced(&resource.manifest) => {
                Ok(Claim::Adopt(object))
            }
            Holder::Nobody if self.unconfined() => Err(Refusal {
                transient: false,
                message: format!(
                    "{} {} is on the cluster already and was not made by wasmco: it is not taken \
                     over. The annotation {FORCE_ANNOTATION}: \"true\" on the resource adopts it; \
                     a terminate then leaves it on the cluster, without wasmco's labels",
                    resource.key.kind, resource.key.name
                ),
            }),
            Holder::Nobody => Err(Refusal {
                transient: false,
                message: format!(
                    "{} {} is on the cluster already and was not made by wasmco: a project's \
                     deployment does not take over what others made",
                    resource.key.kind, resource.key.name
                ),
            }),
        }
    }

    /// Whether `resource` is a certificate request rsync approves, as
    /// EMCO's does for a logical cloud's user: Kubernetes' own kind, in a
    /// context the admin's rights built (a project's could ask for any
    /// identity).
    fn approves(&self, resource: &Resource) -> bool {
        resource.key.kind == CSR_KIND
            && resource.api_version == "certificates.k8s.io/v1"
            && self.unconfined()
    }

    /// Whether this context was built with the admin's rights (not held
    /// to a project's tenancy rules): only such a context adopts objects
    /// made outside wasmco, or trusts an adopted mark it finds (which
    /// keeps an object on the cluster after its terminate).
    pub(super) fn unconfined(&self) -> bool {
        self.context.meta.confinement.is_none()
    }

    /// Whether `live` carries an adoption this context honours.
    pub(super) fn adopted(&self, live: &Value) -> bool {
        self.unconfined() && owner::adopted(live)
    }

    /// Why `resource` is not taken from the deployment `other` (its key,
    /// when the object says): named only to its own project.
    pub(super) fn owned_elsewhere(&self, resource: &Resource, other: Option<&str>) -> String {
        let kind_name = format!("{} {}", resource.key.kind, resource.key.name);
        match other.filter(|other| owner::project_of(other) == owner::project_of(&self.key)) {
            Some(other) => format!(
                "{kind_name} is owned by deployment {other} of this project; it is not taken over"
            ),
            None => format!("{kind_name} is owned by another deployment; it is not taken over"),
        }
    }

    /// Why an apply of a new object conflicted: someone made it since it
    /// was looked at (another deployment, or someone else).
    async fn conflict(&self, resource: &Resource, error: SyncError) -> String {
        let object = match self.target().await {
            Ok(target) => target.get(resource).await.ok().flatten(),
            Err(_) => None,
        };
        let label = owner::owner_label(&self.key);
        match object.map(|o| owner::holder(&o, &self.key, &label)) {
            Some(Holder::Another(other)) => self.owned_elsewhere(resource, other.as_deref()),
            _ => format!(
                "{error}; the annotation {FORCE_ANNOTATION}: \"true\" on the resource takes these fields over"
            ),
        }
    }
}

/// Who holds the name a new resource would take.
enum Claim {
    /// Nothing is there.
    Free,
    /// This target's object, which its labels did not find (relabelled).
    Ours(Resource),
    /// An object nobody in wasmco owns, which the resource asks to adopt.
    Adopt(Resource),
}

/// Why a resource was not applied.
pub(super) struct Refusal {
    pub(super) message: String,
    pub(super) transient: bool,
}

impl Synced {
    /// `resource` not applied, for `refusal`; its last drift kept.
    fn refused(resource: &Resource, refusal: Refusal, drift: Option<Drift>) -> Self {
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
fn ready_now(resource: &Resource, synced: &Synced) -> bool {
    target::ready_once_applied(&resource.key.kind)
        || synced
            .live
            .as_ref()
            .is_some_and(|live| target::is_ready(&resource.key.kind, live))
}
