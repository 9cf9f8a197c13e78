//! One reconcile of one target: make each cluster hold what the target's
//! current revision puts there (or nothing, once terminated), and record
//! what each holds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{
    Connectivity, DeployState, Deployed, Drift, DriftKind, Readiness, ResourceStatus, StoredApp,
    StoredContext, now,
};

use crate::drift::{self, Applied, Fingerprint};
use crate::target::{self, ApplyAs, Labels, SyncError, SyncTarget};
use crate::worker::Settled;
use crate::{APP_LABEL, DIG_LABEL, FORCE_ANNOTATION, Inner, RsyncError, field_manager, labels};

impl Inner {
    /// Reconciles `key` once, towards its state as stored now.
    pub(crate) async fn reconcile(
        self: &Arc<Self>,
        key: &str,
        applied: &Arc<Applied>,
    ) -> Result<Settled, RsyncError> {
        let state = self.contexts.state(key)?;
        let deployed = match state.state {
            _ if state.revision == 0 => return Ok(Settled::Idle),
            DeployState::Instantiated | DeployState::Updated => true,
            DeployState::Terminated => false,
            DeployState::Created | DeployState::Approved => return Ok(Settled::Idle),
        };
        let context = Arc::new(self.contexts.read(key, state.revision)?);
        let mut settled = if deployed {
            self.deploy(key, &context, applied).await?
        } else {
            Settled::Idle
        };
        settled = settled.max(
            self.remove_undesired(key, &context, deployed, applied)
                .await?,
        );
        Ok(settled)
    }

    /// Applies the context, app by app; an app waited for by another is
    /// waited for (its `wait` seconds) when it changed.
    async fn deploy(
        self: &Arc<Self>,
        key: &str,
        context: &StoredContext,
        applied: &Arc<Applied>,
    ) -> Result<Settled, RsyncError> {
        let mut settled = Settled::Resync;
        for app in &context.apps {
            let app = Arc::new(app.clone());
            let mut clusters = JoinSet::new();
            for placement in &app.placement {
                let work = ClusterWork {
                    inner: self.clone(),
                    key: key.to_owned(),
                    revision: context.meta.revision,
                    cluster: placement.cluster.clone(),
                    applied: applied.clone(),
                };
                clusters.spawn(work.sync(app.clone()));
            }
            let mut changed = false;
            while let Some(done) = clusters.join_next().await {
                match done {
                    Ok(outcome) => {
                        let outcome = outcome?;
                        settled = settled.max(outcome.settled);
                        changed |= outcome.applied > 0;
                    }
                    Err(error) => {
                        tracing::error!(target = %key, %error, "cluster sync panicked");
                        settled = Settled::Incomplete;
                    }
                }
            }
            if changed && let Some(wait) = waited_on(context, &app.name) {
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
        }
        Ok(settled)
    }

    /// Deletes, on every cluster any revision used, the objects with the
    /// target's labels that the current revision does not put there (all
    /// of them once terminated); records the terminated ones as Deleted.
    async fn remove_undesired(
        self: &Arc<Self>,
        key: &str,
        context: &Arc<StoredContext>,
        deployed: bool,
        applied: &Arc<Applied>,
    ) -> Result<Settled, RsyncError> {
        let mut wanted: HashMap<ClusterRef, HashSet<(String, String)>> = HashMap::new();
        if deployed {
            for app in &context.apps {
                for placement in &app.placement {
                    wanted.entry(placement.cluster.clone()).or_default().extend(
                        app.resources_on(&placement.cluster)
                            .iter()
                            .map(|r| (app.name.clone(), r.key.to_string())),
                    );
                }
            }
        }
        let mut clusters = JoinSet::new();
        for (cluster, kinds) in self.contexts.footprint(key)? {
            let work = ClusterWork {
                inner: self.clone(),
                key: key.to_owned(),
                revision: context.meta.revision,
                applied: applied.clone(),
                cluster: cluster.clone(),
            };
            let keep = wanted.remove(&cluster).unwrap_or_default();
            let terminated = (!deployed).then(|| context.clone());
            clusters.spawn(work.clean(kinds, keep, terminated, context.meta.app_order.clone()));
        }
        let mut settled = Settled::Idle;
        while let Some(done) = clusters.join_next().await {
            match done {
                Ok(outcome) => settled = settled.max(outcome?),
                Err(error) => {
                    tracing::error!(target = %key, %error, "cluster clean-up panicked");
                    settled = Settled::Incomplete;
                }
            }
        }
        Ok(settled)
    }
}

/// What syncing one app on one cluster did.
struct Outcome {
    settled: Settled,
    applied: usize,
}

/// One target's work on one cluster.
struct ClusterWork {
    inner: Arc<Inner>,
    key: String,
    revision: u64,
    cluster: ClusterRef,
    applied: Arc<Applied>,
}

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
    async fn sync(self, app: Arc<StoredApp>) -> Result<Outcome, RsyncError> {
        let _permit = self.inner.parallel.clone().acquire_owned().await;
        let resources = app.resources_on(&self.cluster);
        let labels = labels(&self.key, Some(&app.name));
        let before =
            self.inner
                .contexts
                .statuses_on(&self.key, self.revision, &app.name, &self.cluster)?;
        let kinds = resources
            .iter()
            .map(|r| (r.api_version.clone(), r.key.kind.clone()))
            .collect();
        let live = match self.list(&kinds, &labels).await {
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
                self.record(&app.name, &before, &statuses)?;
                return Ok(Outcome {
                    settled: Settled::Incomplete,
                    applied: 0,
                });
            }
        };
        let mut settled = Settled::Resync;
        let mut results = Vec::with_capacity(resources.len());
        for resource in &resources {
            let key = resource.key.to_string();
            let synced = self
                .sync_resource(
                    &app.name,
                    resource,
                    &labels,
                    live.get(&key),
                    before.get(&key),
                )
                .await;
            if synced.transient {
                settled = Settled::Incomplete;
            }
            // What follows a CRD may be of its kind: wait until it is Established.
            if resource.key.kind == "CustomResourceDefinition"
                && synced.status.deployed == Deployed::Applied
                && synced.applied
            {
                self.wait_ready(resource).await;
            }
            results.push((key, synced));
        }
        let mut statuses: Vec<(String, ResourceStatus)> = results
            .iter()
            .map(|(key, synced)| (key.clone(), synced.status.clone()))
            .collect();
        // Progress first: the objects are there, readiness may take a while.
        if results.iter().any(|(_, s)| s.applied) {
            self.record(&app.name, &before, &statuses)?;
        }
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
        self.record(&app.name, &before, &statuses)?;
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
            Some(known) => Fingerprint::of(&desired, &live.manifest).held == known.held,
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
        let outcome = self
            .with_retries(|target| {
                let desired = resource.clone();
                async move { target.apply(&desired, labels, how).await }
            })
            .await;
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
        let owner = match self.inner.target(&self.cluster).await {
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

    /// Deletes the objects with the target's labels of `kinds` that are not
    /// in `keep` (app, `name+Kind`), latest app first; with `terminated`,
    /// records that revision's objects on this cluster as Deleted once
    /// none is left.
    async fn clean(
        self,
        kinds: BTreeSet<(String, String)>,
        keep: HashSet<(String, String)>,
        terminated: Option<Arc<StoredContext>>,
        app_order: Vec<String>,
    ) -> Result<Settled, RsyncError> {
        let _permit = self.inner.parallel.clone().acquire_owned().await;
        let found = match self.list(&kinds, &labels(&self.key, None)).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not list for clean-up");
                return Ok(Settled::Incomplete);
            }
        };
        let app_of = |object: &Resource| {
            object.manifest["metadata"]["labels"][APP_LABEL]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let mut undesired: Vec<(String, Resource)> = found
            .into_values()
            .map(|object| (app_of(&object), object))
            .filter(|(app, object)| !keep.contains(&(app.clone(), object.key.to_string())))
            .collect();
        let rank = |app: &str| app_order.iter().position(|a| a == app);
        // Latest app first, and within an app the reverse of apply order.
        undesired.sort_by_key(|(app, object)| {
            (
                std::cmp::Reverse(rank(app)),
                std::cmp::Reverse(wasmco_store::appcontext::kind_rank(object)),
            )
        });
        let mut settled = Settled::Idle;
        let mut failed: BTreeMap<(String, String), String> = BTreeMap::new();
        for (app, object) in &undesired {
            match self.delete(object).await {
                Ok(()) => self
                    .applied
                    .forget(&self.cluster, app, &object.key.to_string()),
                Err(error) => {
                    settled = Settled::Incomplete;
                    failed.insert((app.clone(), object.key.to_string()), error);
                }
            }
        }
        if let Some(context) = terminated {
            settled = settled.max(self.record_terminated(&context, &failed).await?);
        }
        Ok(settled)
    }

    /// Records the terminated revision's objects on this cluster: Deleted
    /// when the cluster no longer holds them, Failed when deleting failed
    /// or when what it holds under that name is not this target's (an
    /// object it was refused, say): never Deleted while it is there.
    async fn record_terminated(
        &self,
        context: &StoredContext,
        failed: &BTreeMap<(String, String), String>,
    ) -> Result<Settled, RsyncError> {
        let apps: Vec<&StoredApp> = context
            .apps
            .iter()
            .filter(|app| app.placement.iter().any(|p| p.cluster == self.cluster))
            .collect();
        let kinds = apps
            .iter()
            .flat_map(|app| app.resources_on(&self.cluster))
            .map(|r| (r.api_version.clone(), r.key.kind.clone()))
            .collect();
        // Everything of those kinds, whoever it belongs to.
        let held = match self.list(&kinds, &Labels::new()).await {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not confirm the deletion");
                return Ok(Settled::Incomplete);
            }
        };
        for app in apps {
            let before = self.inner.contexts.statuses_on(
                &self.key,
                self.revision,
                &app.name,
                &self.cluster,
            )?;
            let statuses: Vec<_> = app
                .resources_on(&self.cluster)
                .into_iter()
                .map(|r| {
                    let key = r.key.to_string();
                    let still_there = held
                        .get(&key)
                        .filter(|object| object.namespace == r.namespace || r.namespace.is_none());
                    let status = match (failed.get(&(app.name.clone(), key.clone())), still_there) {
                        (Some(error), _) => ResourceStatus::failed(r, error.clone()),
                        (None, Some(object)) => {
                            let owner = object.manifest["metadata"]["labels"][DIG_LABEL]
                                .as_str()
                                .map_or_else(
                                    || "not by wasmco".to_owned(),
                                    |owner| format!("by deployment intent group {owner}"),
                                );
                            ResourceStatus::failed(
                                r,
                                format!(
                                    "{} {} stays on the cluster: it is managed {owner}, not by this deployment",
                                    r.key.kind, r.key.name
                                ),
                            )
                        }
                        (None, None) => ResourceStatus::deleted(r),
                    };
                    (key, status)
                })
                .collect();
            self.record(&app.name, &before, &statuses)?;
        }
        Ok(Settled::Idle)
    }

    /// Deletes `object` and waits (bounded) until it is gone.
    async fn delete(&self, object: &Resource) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.inner.config.ready_timeout;
        let mut last = "not deleted in time".to_owned();
        while tokio::time::Instant::now() < deadline {
            let gone = match self.inner.target(&self.cluster).await {
                Ok(target) => target.delete(object).await,
                Err(error) => Err(error),
            };
            match gone {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) if !error.is_transient() => return Err(error.to_string()),
                Err(error) => last = format!("not deleted in time: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(last)
    }

    /// The objects of `kinds` carrying `labels`, by `name+Kind`.
    async fn list(
        &self,
        kinds: &BTreeSet<(String, String)>,
        labels: &Labels,
    ) -> Result<HashMap<String, Resource>, SyncError> {
        let mut found = HashMap::new();
        for (api_version, kind) in kinds {
            let objects = self
                .with_retries(|target| async move {
                    target.list_labelled(api_version, kind, labels).await
                })
                .await?;
            for object in objects {
                if let Ok(object) = Resource::from_manifest(object) {
                    found.insert(object.key.to_string(), object);
                }
            }
        }
        Ok(found)
    }

    /// Writes the statuses that differ from `before`.
    fn record(
        &self,
        app: &str,
        before: &HashMap<String, ResourceStatus>,
        statuses: &[(String, ResourceStatus)],
    ) -> Result<(), RsyncError> {
        let changed: Vec<(String, ResourceStatus)> = statuses
            .iter()
            .filter(|(key, status)| before.get(key) != Some(status))
            .cloned()
            .collect();
        if !changed.is_empty() {
            self.inner.contexts.put_statuses(
                &self.key,
                self.revision,
                app,
                &self.cluster,
                &changed,
            )?;
        }
        Ok(())
    }

    /// Polls until `resource` is ready (bounded); whether it is.
    async fn wait_ready(&self, resource: &Resource) -> bool {
        let deadline = tokio::time::Instant::now() + self.inner.config.ready_timeout;
        while tokio::time::Instant::now() < deadline {
            if let Ok(target) = self.inner.target(&self.cluster).await
                && target.ready(resource).await.unwrap_or(false)
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// Runs `attempt` against the cluster, retrying what may succeed later
    /// with exponential backoff and jitter (at most `attempts` times); the
    /// cluster is Retrying meanwhile and Available once it answers.
    async fn with_retries<T, F, Fut>(&self, attempt: F) -> Result<T, SyncError>
    where
        F: Fn(Arc<dyn SyncTarget>) -> Fut,
        Fut: std::future::Future<Output = Result<T, SyncError>>,
    {
        let mut delays = self.inner.backoff();
        let mut tries = 0;
        loop {
            let result = match self.inner.target(&self.cluster).await {
                Ok(target) => attempt(target).await,
                Err(error) => Err(error),
            };
            match result {
                Ok(done) => {
                    self.connectivity(Connectivity::Available);
                    return Ok(done);
                }
                Err(error) if error.is_transient() && tries + 1 < self.inner.config.attempts => {
                    tries += 1;
                    self.connectivity(Connectivity::Retrying);
                    tracing::warn!(cluster = %self.cluster, %error, attempt = tries, "cluster not reachable; retrying");
                    let delay = delays.next().unwrap_or(self.inner.config.backoff.1);
                    tokio::time::sleep(delay).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    fn connectivity(&self, state: Connectivity) {
        if let Err(error) =
            self.inner
                .contexts
                .put_connectivity(&self.key, self.revision, &self.cluster, state)
        {
            tracing::warn!(cluster = %self.cluster, %error, "could not record connectivity");
        }
    }
}

/// Seconds to wait after `app` when a later app waits for it.
fn waited_on(context: &StoredContext, app: &str) -> Option<u64> {
    context
        .meta
        .dependencies
        .values()
        .flatten()
        .filter(|d| d.app == app)
        .map(|d| d.wait)
        .max()
}
