//! One reconcile of one target: make each cluster hold what the target's
//! current revision puts there (or nothing, once terminated), and record
//! what each holds.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{
    Connectivity, DeployState, Deployed, ResourceStatus, StoredContext,
};

use crate::drift::Applied;
use crate::engine::{Inner, RsyncError};
use crate::stored;
use crate::target::{Labels, SyncError, SyncTarget};
use crate::worker::{Current, Drifted, Settled};

mod apply;
mod clean;
mod csr;
mod hooks;

impl Inner {
    /// Reconciles `key` once, towards its state as stored now.
    pub(crate) async fn reconcile(
        self: &Arc<Self>,
        key: &str,
        applied: &Arc<Applied>,
        current: &Current,
        generation: u64,
    ) -> Result<Settled, RsyncError> {
        let owned = key.to_owned();
        let state = stored::off_the_workers(&self.contexts, move |c| c.state(&owned)).await?;
        let deployed = match state.state {
            _ if state.revision == 0 => return Ok(Settled::Idle),
            DeployState::Instantiated | DeployState::Updated => true,
            DeployState::Terminated => false,
            // Stopped: nothing more until the next action.
            DeployState::Created
            | DeployState::Approved
            | DeployState::InstantiateStopped
            | DeployState::TerminateStopped => return Ok(Settled::Idle),
        };
        if !deployed
            && let Some(heir) = &state.handed_over_to
            && !self.holds_what_was_handed_over(heir).await?
        {
            // Removing now would take objects the heir is about to adopt.
            return Ok(Settled::Incomplete);
        }
        let (owned, revision) = (key.to_owned(), state.revision);
        let context = Arc::new(
            stored::off_the_workers(&self.contexts, move |c| c.read(&owned, revision)).await?,
        );
        if deployed {
            current.set(generation, Some(context.clone()));
        }
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

    /// Repairs the object `drifted` reports, if `context` (the revision
    /// being deployed) puts it there; whether it needs a reconcile after.
    pub(crate) async fn repair(
        self: &Arc<Self>,
        key: &str,
        context: &Arc<StoredContext>,
        applied: &Arc<Applied>,
        drifted: Drifted,
    ) -> Result<bool, RsyncError> {
        let Drifted {
            cluster,
            api_version,
            kind,
            change,
        } = drifted;
        // The state may have moved on (a terminate, an update) since the
        // worker read it: that state's reconcile sees to the object.
        let owned = key.to_owned();
        let state = stored::off_the_workers(&self.contexts, move |c| c.state(&owned)).await?;
        let deploys = state.state.is_deployed();
        if !deploys || state.revision != context.meta.revision {
            return Ok(false);
        }
        let Some(app) = context.apps.iter().find(|app| {
            change.app.as_deref() == Some(crate::owner::app_label(&app.name).as_str())
                && app.placement.iter().any(|p| p.cluster == cluster)
        }) else {
            // Not this revision's: the next reconcile removes it.
            return Ok(change.live.is_some());
        };
        let resources = app.resources_on(&cluster);
        let Some(resource) = resources.iter().find(|r| {
            r.key.name == change.name && r.key.kind == kind && r.api_version == api_version
        }) else {
            return Ok(change.live.is_some());
        };
        let work = ClusterWork::new(self, key, context, &cluster, applied);
        work.repair(&app.name, resource, change.live).await
    }

    /// Whether `heir` (a DIG a migrate handed objects to) has applied, or
    /// given up on, every resource of its context; an heir no longer
    /// deployed waits for nothing.
    async fn holds_what_was_handed_over(&self, heir: &str) -> Result<bool, RsyncError> {
        let heir = heir.to_owned();
        let read = stored::off_the_workers(&self.contexts, move |c| {
            let state = c.state(&heir)?;
            if !state.state.is_deployed() || state.revision == 0 {
                return Ok(None);
            }
            let context = c.read(&heir, state.revision)?;
            let statuses = c.statuses(&heir, state.revision)?;
            Ok(Some((context, statuses)))
        });
        let Some((context, statuses)) = read.await? else {
            return Ok(true);
        };
        Ok(context.apps.iter().all(|app| {
            app.placement.iter().all(|placement| {
                app.resources_on(&placement.cluster).iter().all(|resource| {
                    statuses
                        .get(&(
                            app.name.clone(),
                            placement.cluster.clone(),
                            resource.key.to_string(),
                        ))
                        .is_some_and(|s| s.deployed != Deployed::Pending)
                })
            })
        }))
    }

    /// Applies the context, app by app; an app waited for by another is
    /// waited for (its `wait` seconds) when it changed.
    async fn deploy(
        self: &Arc<Self>,
        key: &str,
        context: &Arc<StoredContext>,
        applied: &Arc<Applied>,
    ) -> Result<Settled, RsyncError> {
        let mut settled = Settled::Resync;
        for (index, app) in context.apps.iter().enumerate() {
            let mut clusters = JoinSet::new();
            for placement in &app.placement {
                let work = ClusterWork::new(self, key, context, &placement.cluster, applied);
                clusters.spawn(work.sync(index));
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
                            .map(|r| (crate::owner::app_label(&app.name), r.key.to_string())),
                    );
                }
            }
        }
        let mut clusters = JoinSet::new();
        let owned = key.to_owned();
        let footprint = stored::off_the_workers(&self.contexts, move |c| c.footprint(&owned));
        for (cluster, kinds) in footprint.await? {
            let work = ClusterWork::new(self, key, context, &cluster, applied);
            let keep = wanted.remove(&cluster).unwrap_or_default();
            clusters.spawn(work.clean(kinds, keep, !deployed));
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
pub(super) struct Outcome {
    pub(super) settled: Settled,
    pub(super) applied: usize,
}

/// One target's work on one cluster.
struct ClusterWork {
    inner: Arc<Inner>,
    key: String,
    /// The revision being reconciled (shared, never copied per cluster).
    context: Arc<StoredContext>,
    cluster: ClusterRef,
    applied: Arc<Applied>,
    /// The connectivity last recorded, so that each request does not
    /// read the store to find it unchanged.
    reported: std::sync::Mutex<Option<Connectivity>>,
    /// The worker's repair count when this work began.
    repairs_seen: u64,
    /// What every write about the target carries: that this host still
    /// owns its reconcile (see `Fence`).
    fence: Option<wasmco_store::Expect>,
}

impl ClusterWork {
    fn revision(&self) -> u64 {
        self.context.meta.revision
    }

    /// The cluster, as this context reaches it.
    async fn target(&self) -> Result<Arc<dyn SyncTarget>, SyncError> {
        self.inner
            .target_as(&crate::engine::Reach::of(&self.cluster, &self.context.meta))
            .await
    }

    fn new(
        inner: &Arc<Inner>,
        key: &str,
        context: &Arc<StoredContext>,
        cluster: &ClusterRef,
        applied: &Arc<Applied>,
    ) -> Self {
        ClusterWork {
            inner: inner.clone(),
            key: key.to_owned(),
            context: context.clone(),
            cluster: cluster.clone(),
            applied: applied.clone(),
            reported: std::sync::Mutex::default(),
            repairs_seen: applied.repairs(),
            fence: inner.ownership.group.ownership_fence(key),
        }
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

    /// What is recorded for `app`'s resources on this cluster in this revision.
    async fn recorded(&self, app: &str) -> Result<HashMap<String, ResourceStatus>, RsyncError> {
        let (key, revision) = (self.key.clone(), self.revision());
        let (app, cluster) = (app.to_owned(), self.cluster.clone());
        Ok(stored::off_the_workers(&self.inner.contexts, move |c| {
            c.statuses_on(&key, revision, &app, &cluster)
        })
        .await?)
    }

    /// Writes the statuses that differ from what is `recorded`, and
    /// notes them there.
    ///
    /// A repair may have recorded a drift since this work read the
    /// statuses: then they are read again, and a later drift kept.
    async fn record(
        &self,
        app: &str,
        recorded: &mut HashMap<String, ResourceStatus>,
        statuses: &[(String, ResourceStatus)],
    ) -> Result<(), RsyncError> {
        if self.applied.repairs() != self.repairs_seen {
            *recorded = self.recorded(app).await?;
        }
        let changed: Vec<(String, ResourceStatus)> = statuses
            .iter()
            .map(|(key, status)| {
                let mut status = status.clone();
                let stored = recorded.get(key).and_then(|r| r.drift.as_ref());
                if stored.is_some_and(|stored| {
                    status
                        .drift
                        .as_ref()
                        .is_none_or(|d| d.detected < stored.detected)
                }) {
                    status.drift = stored.cloned();
                }
                (key.clone(), status)
            })
            .filter(|(key, status)| recorded.get(key) != Some(status))
            .collect();
        if !changed.is_empty() {
            let (key, revision) = (self.key.clone(), self.revision());
            let (app, cluster) = (app.to_owned(), self.cluster.clone());
            let (writes, fence) = (changed.clone(), self.fence.clone());
            stored::off_the_workers(&self.inner.contexts, move |c| {
                c.put_statuses(&key, revision, &app, &cluster, &writes, fence.as_ref())
            })
            .await?;
            recorded.extend(changed);
        }
        Ok(())
    }

    /// Polls until `resource` is ready (bounded); whether it is.
    async fn wait_ready(&self, resource: &Resource) -> bool {
        let deadline = tokio::time::Instant::now() + self.inner.config.ready_timeout;
        while tokio::time::Instant::now() < deadline {
            if let Ok(target) = self.target().await
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
            let result = match self.target().await {
                Ok(target) => attempt(target).await,
                Err(error) => Err(error),
            };
            match result {
                Ok(done) => {
                    self.connectivity(Connectivity::Available).await;
                    return Ok(done);
                }
                Err(error) if error.is_transient() && tries + 1 < self.inner.config.attempts => {
                    tries += 1;
                    self.inner.metrics.retry();
                    self.connectivity(Connectivity::Retrying).await;
                    tracing::warn!(cluster = %self.cluster, %error, attempt = tries, "cluster not reachable; retrying");
                    let delay = delays.next().unwrap_or(self.inner.config.backoff.1);
                    tokio::time::sleep(delay).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn connectivity(&self, state: Connectivity) {
        {
            let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
            if reported.replace(state) == Some(state) {
                return;
            }
        }
        if state == Connectivity::Available {
            self.inner.reached(&self.cluster).await;
        }
        let (key, revision) = (self.key.clone(), self.revision());
        let (cluster, fence) = (self.cluster.clone(), self.fence.clone());
        let written = stored::off_the_workers(&self.inner.contexts, move |c| {
            c.put_connectivity(&key, revision, &cluster, state, fence.as_ref())
        });
        if let Err(error) = written.await {
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
