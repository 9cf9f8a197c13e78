//! Applying an app's resources on one cluster: only what is missing or
//! drifted, refusing what someone else owns, then waiting for readiness.

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use serde_json::Value;

use wasmco_core::cloud::CSR_KIND;
use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{
    Deployed, Drift, DriftKind, Readiness, ResourceStatus, kind_rank, now,
};

use super::{ClusterWork, Outcome};
use crate::drift::{self, Fingerprint};
use crate::target::{self, ApplyAs, Labels, SyncError};
use crate::worker::Settled;
use crate::{DIG_LABEL, FORCE_ANNOTATION, RsyncError, field_manager, labels};

/// What became of one resource in a sync.
struct Synced {
    status: ResourceStatus,
    /// Applied in this sync (not found as applied).
    applied: bool,
    /// As the cluster holds it, when known.
    live: Option<Value>,
    /// Failed in a way worth trying again.
    transient: bool,
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
        let mut recorded = self.recorded(&app.name)?;
        // A chart's pre-install hooks finish before its first apply here.
        if let Err(failed) = self.run_hooks(app, HookEvent::PreInstall).await? {
            let statuses: Vec<_> = resources
                .iter()
                .map(|r| {
                    let waiting = format!("waiting for the app's hooks: {}", failed.message);
                    (r.key.to_string(), ResourceStatus::failed(r, waiting))
                })
                .collect();
            self.record(&app.name, &mut recorded, &statuses)?;
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
                    .list(&kinds, &crate::labels(source, Some(&app.name)))
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
                self.record(&app.name, &mut recorded, &statuses)?;
                return Ok(Outcome {
                    settled: Settled::Incomplete,
                    applied: 0,
                });
            }
        };
        let mut settled = Settled::Resync;
        let mut results: Vec<(String, Synced)> = Vec::with_capacity(resources.len());
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
                    in_flight.push_back(self.sync_resource(
                        &app.name,
                        resource,
                        &labels,
                        live.get(&key),
                        recorded.get(&key),
                    ));
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
            if resource.key.kind == CSR_KIND
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
        self.record(&app.name, &mut recorded, &progress)?;
        let mut statuses: Vec<(String, ResourceStatus)> = results
            .iter()
            .map(|(key, synced)| (key.clone(), synced.status.clone()))
            .collect();
        for ((resource, (_, synced)), (_, status)) in
            resources.iter().zip(&results).zip(&mut statuses)
        {
            if status.deployed == Deployed::Applied
                && (target::ready_once_applied(&resource.key.kind)
                    || synced
                        .live
                        .as_ref()
                        .is_some_and(|l| target::is_ready(&resource.key.kind, l))
                    || self.wait_ready(resource).await)
            {
                status.ready = Readiness::Ready;
            }
        }
        self.record(&app.name, &mut recorded, &statuses)?;
        for (resource, (_, status)) in resources.iter().zip(&statuses) {
            if resource.key.kind == CSR_KIND
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

    /// Applies `resource` unless the cluster holds it as applied; notices
    /// and repairs drift.
    async fn sync_resource(
        &self,
        app: &str,
        resource: &Resource,
        labels: &Labels,
        live: Option<&Resource>,
        before: Option<&ResourceStatus>,
    ) -> Synced {
        let key = resource.key.to_string();
        let desired = target::labelled(resource, labels);
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
        let kept_drift = before.and_then(|b| b.drift.clone());
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
        // Ours (by its labels): take back what someone changed. Anyone
        // else's: report their fields rather than take them, unless told.
        let force = live.is_some()
            || resource.manifest["metadata"]["annotations"][FORCE_ANNOTATION] == "true";
        let manager = field_manager(&self.key);
        let how = ApplyAs {
            manager: &manager,
            force,
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
                    live: None,
                    transient: false,
                }
            }
            Err(error) => {
                let transient = error.is_transient();
                let message = match error {
                    SyncError::Refused { code: 409, .. } if !force => {
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

    /// Why an apply conflicted: the DIG that manages the object, or the
    /// cluster's list of conflicting fields and how to take them over.
    async fn conflict(&self, resource: &Resource, error: SyncError) -> String {
        let owner = match self.target().await {
            Ok(target) => target.get(resource).await.ok().flatten(),
            Err(_) => None,
        };
        let owner = owner.as_ref().and_then(|o| {
            o["metadata"]["labels"][DIG_LABEL]
                .as_str()
                .map(str::to_owned)
        });
        match owner {
            Some(owner) => format!(
                "{} {} is already managed by deployment intent group {owner} (label {DIG_LABEL}); \
                 it is not taken over",
                resource.key.kind, resource.key.name
            ),
            None => format!(
                "{error}; the annotation {FORCE_ANNOTATION}: \"true\" on the resource takes these fields over"
            ),
        }
    }
}
