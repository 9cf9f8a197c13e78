//! One target's work on one cluster: what every phase of it shares (the
//! client, the retries, the statuses it reads and records).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{Connectivity, ResourceStatus, StatusCell, StoredContext};

use super::reconciler::Reconciler;
use super::settled::Look;
use crate::clients::Reach;
use crate::drift::Applied;
use crate::error::RsyncError;
use crate::stored;
use crate::target::{Labels, SyncError, SyncTarget};

/// One target's work on one cluster.
pub(crate) struct ClusterWork {
    pub(super) reconciler: Arc<Reconciler>,
    pub(super) key: String,
    /// The revision being reconciled (shared, never copied per cluster).
    pub(super) context: Arc<StoredContext>,
    pub(super) cluster: ClusterRef,
    pub(super) applied: Arc<Applied>,
    /// Why the reconcile runs.
    look: Look,
    /// The connectivity last recorded, so that each request does not
    /// read the store to find it unchanged.
    reported: std::sync::Mutex<Option<Connectivity>>,
    /// The worker's repair count when this work began.
    repairs_seen: u64,
    /// What every write about the target carries: that this host still
    /// owns its reconcile (see `Fence`).
    pub(super) fence: Option<wasmco_store::Expect>,
}

impl ClusterWork {
    pub(super) fn revision(&self) -> u64 {
        self.context.meta.revision
    }

    /// The cluster, as this context reaches it.
    pub(super) async fn target(&self) -> Result<Arc<dyn SyncTarget>, SyncError> {
        self.reconciler
            .clients
            .target_as(&Reach::of(&self.cluster, &self.context.meta))
            .await
    }

    pub(super) fn new(
        reconciler: &Arc<Reconciler>,
        key: &str,
        context: &Arc<StoredContext>,
        cluster: &ClusterRef,
        applied: &Arc<Applied>,
        look: Look,
    ) -> Self {
        ClusterWork {
            reconciler: reconciler.clone(),
            key: key.to_owned(),
            context: context.clone(),
            cluster: cluster.clone(),
            applied: applied.clone(),
            look,
            reported: std::sync::Mutex::default(),
            repairs_seen: applied.repairs(),
            fence: reconciler.group.ownership_fence(key),
        }
    }

    /// The objects of `kinds` carrying `labels`, by `name+Kind`.
    pub(super) async fn list(
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

    /// Lists as [`list`](Self::list) does, and notes it as the latest
    /// look at `app`'s objects (`None`: all of the target's).
    pub(super) async fn look(
        &self,
        app: Option<&str>,
        kinds: &BTreeSet<(String, String)>,
        labels: &Labels,
    ) -> Result<HashMap<String, Resource>, SyncError> {
        let began = Instant::now();
        let found = self.list(kinds, labels).await?;
        self.applied.looked(&self.cluster, app, began);
        Ok(found)
    }

    /// Whether this reconcile, a resync, may leave `app`'s objects of
    /// `kinds` here (`None`: all of the target's) unread: the watches have
    /// reported every change since the last look at them.
    pub(super) fn watched_since_look(
        &self,
        app: Option<&str>,
        kinds: &BTreeSet<(String, String)>,
    ) -> bool {
        if self.look != Look::Resync {
            return false;
        }
        let Some(look) = self.applied.last_look(&self.cluster, app) else {
            return false;
        };
        let watches = &self.reconciler.watches;
        kinds.iter().all(|(api_version, kind)| {
            watches.vouches_since(&self.cluster, api_version, kind, look)
        })
    }

    /// What is recorded for `app`'s resources on this cluster in this revision.
    pub(super) async fn recorded(
        &self,
        app: &str,
    ) -> Result<HashMap<String, ResourceStatus>, RsyncError> {
        let (key, revision) = (self.key.clone(), self.revision());
        let (app, cluster) = (app.to_owned(), self.cluster.clone());
        Ok(
            stored::off_the_workers(&self.reconciler.contexts, move |c| {
                c.statuses_on(&key, revision, &app, &cluster)
            })
            .await?,
        )
    }

    /// Writes the statuses that differ from what is `recorded`, and
    /// notes them there.
    ///
    /// A repair may have recorded a drift since this work read the
    /// statuses: then they are read again, and a later drift kept.
    pub(super) async fn record(
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
            let at = StatusCell {
                dig: self.key.clone(),
                revision: self.revision(),
                app: app.to_owned(),
                cluster: self.cluster.clone(),
            };
            let (writes, fence, counted) = (changed.clone(), self.fence.clone(), self.counted(app));
            stored::off_the_workers(&self.reconciler.contexts, move |c| {
                c.put_statuses(&at, &writes, &counted, fence.as_ref())
            })
            .await?;
            recorded.extend(changed);
        }
        Ok(())
    }

    /// The resources of `app` whose statuses its tally here counts.
    fn counted(&self, app: &str) -> BTreeSet<String> {
        self.context
            .apps
            .iter()
            .filter(|a| a.name == app)
            .flat_map(|a| a.resources_on(&self.cluster))
            .map(|resource| resource.key.to_string())
            .collect()
    }

    /// Polls until `resource` is ready (bounded); whether it is.
    pub(super) async fn wait_ready(&self, resource: &Resource) -> bool {
        let deadline = tokio::time::Instant::now() + self.reconciler.config.ready_timeout;
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
    pub(super) async fn with_retries<T, F, Fut>(&self, attempt: F) -> Result<T, SyncError>
    where
        F: Fn(Arc<dyn SyncTarget>) -> Fut,
        Fut: std::future::Future<Output = Result<T, SyncError>>,
    {
        let mut delays = self.reconciler.config.retries();
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
                Err(error)
                    if error.is_transient() && tries + 1 < self.reconciler.config.attempts =>
                {
                    tries += 1;
                    self.reconciler.metrics.retry();
                    self.connectivity(Connectivity::Retrying).await;
                    tracing::warn!(cluster = %self.cluster, %error, attempt = tries, "cluster not reachable; retrying");
                    let delay = delays.next().unwrap_or(self.reconciler.config.backoff.1);
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
            self.reconciler.health.reached(&self.cluster).await;
        }
        let (key, revision) = (self.key.clone(), self.revision());
        let (cluster, fence) = (self.cluster.clone(), self.fence.clone());
        let written = stored::off_the_workers(&self.reconciler.contexts, move |c| {
            c.put_connectivity(&key, revision, &cluster, state, fence.as_ref())
        });
        if let Err(error) = written.await {
            tracing::warn!(cluster = %self.cluster, %error, "could not record connectivity");
        }
    }

    /// Deletes `object` (exactly that one, when it carries the uid the
    /// cluster gave it) and waits (bounded) until it is gone.
    pub(super) async fn delete(&self, object: &Resource) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.reconciler.config.ready_timeout;
        let mut last = "not deleted in time".to_owned();
        let uid = object.manifest["metadata"]["uid"].as_str();
        while tokio::time::Instant::now() < deadline {
            let gone = match self.target().await {
                Ok(target) => target.delete(object, uid).await,
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
}
