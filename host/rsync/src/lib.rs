//! rsync: makes clusters match an AppContext revision, and records the
//! status of every resource and cluster in the store.
//!
//! Apps go in app order; an app that others wait for as `Ready` is waited
//! for (plus the dependency's `wait`) before they start. An app's clusters
//! are synced in parallel (bounded); a cluster's resources in order (CRDs
//! first). A cluster that cannot be reached is retried with bounded
//! exponential backoff and jitter while the others go on.

pub mod target;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, Semaphore};

use wasmco_core::resource::Resource;
use wasmco_core::{ClusterRef, Kind};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::appcontext::{
    Connectivity, ContextHandoff, ContextStore, DeployState, Deployed, Readiness, ResourceStatus,
    StoredApp, StoredContext, SyncEngine,
};
use wasmco_store::db::{ResourceDb, ResourceId};

pub use target::{DirectoryTarget, KubeTarget, SyncError, SyncTarget};

/// Labels every applied object carries.
pub const DIG_LABEL: &str = "wasmco.io/deployment-intent-group";
/// See [`DIG_LABEL`].
pub const APP_LABEL: &str = "wasmco.io/app";
/// See [`DIG_LABEL`].
pub const CONTEXT_LABEL: &str = "wasmco.io/context-revision";

/// How rsync paces itself.
#[derive(Debug, Clone)]
pub struct RsyncConfig {
    /// Clusters synced at once.
    pub parallel_clusters: usize,
    /// How long a resource may take to become ready before it is reported not ready.
    pub ready_timeout: Duration,
    /// First and largest retry delay for an unreachable cluster.
    pub backoff: (Duration, Duration),
    /// Attempts at an unreachable cluster before its resources are marked Failed.
    pub attempts: u32,
    /// Write each cluster's manifests under this directory instead of
    /// applying them (dry runs, GitOps).
    pub directory: Option<std::path::PathBuf>,
    /// What a cluster's kubeconfig may ask of this host.
    pub kubeconfigs: Arc<KubeconfigPolicy>,
    /// How long connecting to a cluster may take.
    pub connect_timeout: Duration,
    /// How long one request to a cluster may take to be sent and answered.
    /// kube-rs waits for ever by default, so a frozen cluster would hold
    /// its work, and every app waiting on it, without a word; past this it
    /// is Retrying, as a cluster that refuses connections is.
    pub request_timeout: Duration,
}

impl Default for RsyncConfig {
    fn default() -> Self {
        RsyncConfig {
            parallel_clusters: 16,
            ready_timeout: Duration::from_secs(60),
            backoff: (Duration::from_millis(100), Duration::from_secs(5)),
            attempts: 30,
            directory: None,
            kubeconfigs: Arc::default(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The sync engine; cheap to clone.
#[derive(Clone)]
pub struct Rsync {
    inner: Arc<Inner>,
}

struct Inner {
    db: ResourceDb,
    contexts: ContextStore,
    runtime: tokio::runtime::Handle,
    targets: Mutex<HashMap<ClusterRef, Arc<dyn SyncTarget>>>,
    parallel: Arc<Semaphore>,
    config: RsyncConfig,
}

impl Rsync {
    /// An engine running its work on `runtime`.
    pub fn new(
        db: ResourceDb,
        contexts: ContextStore,
        runtime: tokio::runtime::Handle,
        config: RsyncConfig,
    ) -> Self {
        let parallel = Arc::new(Semaphore::new(config.parallel_clusters.max(1)));
        Rsync {
            inner: Arc::new(Inner {
                db,
                contexts,
                runtime,
                targets: Mutex::default(),
                parallel,
                config,
            }),
        }
    }
}

impl Rsync {
    /// Takes up, after a restart, every DIG whose context was deployed or
    /// terminated: applies and deletes are idempotent, so finished work is
    /// confirmed and unfinished work completed, with no duplicate objects.
    pub fn resume(&self) -> Result<usize, RsyncError> {
        let mut resumed = 0;
        for (dig, state) in self.inner.contexts.states()? {
            if state.revision == 0 {
                continue;
            }
            let handoff = ContextHandoff {
                dig,
                revision: state.revision,
                previous: None,
            };
            match state.state {
                DeployState::Instantiated | DeployState::Updated => self.deploy(handoff),
                DeployState::Terminated => self.terminate(handoff),
                DeployState::Created | DeployState::Approved => continue,
            }
            resumed += 1;
        }
        Ok(resumed)
    }
}

impl SyncEngine for Rsync {
    fn deploy(&self, handoff: ContextHandoff) {
        let inner = self.inner.clone();
        self.inner.runtime.spawn(async move {
            if let Err(error) = inner.deploy(&handoff).await {
                tracing::error!(dig = %handoff.dig, revision = handoff.revision, %error, "sync failed");
            }
        });
    }

    fn terminate(&self, handoff: ContextHandoff) {
        let inner = self.inner.clone();
        self.inner.runtime.spawn(async move {
            if let Err(error) = inner.terminate(&handoff).await {
                tracing::error!(dig = %handoff.dig, revision = handoff.revision, %error, "terminate failed");
            }
        });
    }

    fn cluster_changed(&self, cluster: &ClusterRef) {
        let inner = self.inner.clone();
        let cluster = cluster.clone();
        self.inner.runtime.spawn(async move {
            inner.targets.lock().await.remove(&cluster);
        });
    }
}

/// Why a whole sync could not run.
#[derive(Debug, thiserror::Error)]
pub enum RsyncError {
    /// The context could not be read or its status written.
    #[error(transparent)]
    Context(#[from] wasmco_store::appcontext::ContextError),
}

fn labels(handoff: &ContextHandoff, app: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (DIG_LABEL.to_owned(), handoff.dig.replace('/', ".")),
        (APP_LABEL.to_owned(), app.to_owned()),
        (CONTEXT_LABEL.to_owned(), handoff.revision.to_string()),
    ])
}

impl Inner {
    /// The target of `cluster`, made from its stored kubeconfig once.
    async fn target(&self, cluster: &ClusterRef) -> Result<Arc<dyn SyncTarget>, SyncError> {
        if let Some(target) = self.targets.lock().await.get(cluster) {
            return Ok(target.clone());
        }
        if let Some(directory) = &self.config.directory {
            let target: Arc<dyn SyncTarget> =
                Arc::new(DirectoryTarget::new(directory.join(cluster.to_string())));
            self.targets
                .lock()
                .await
                .insert(cluster.clone(), target.clone());
            return Ok(target);
        }
        let id = ResourceId::new(
            Kind::Cluster,
            vec![cluster.provider.clone(), cluster.cluster.clone()],
        );
        let kubeconfig = self
            .db
            .file(&id)
            .map_err(|e| SyncError::Config(e.to_string()))?
            .ok_or_else(|| SyncError::Config(format!("cluster {cluster} has no kubeconfig")))?;
        // Checked again here, not only at upload: a kubeconfig stored by an
        // older version, or a policy tightened since, must not reach kube-rs.
        let refused = |e: wasmco_pki::kubeconfig::KubeconfigError| SyncError::Config(e.to_string());
        let mut config = self
            .config
            .kubeconfigs
            .check(&kubeconfig)
            .map_err(refused)?
            .client_config(&self.config.kubeconfigs)
            .await
            .map_err(refused)?;
        config.connect_timeout = Some(self.config.connect_timeout);
        config.read_timeout = Some(self.config.request_timeout);
        config.write_timeout = Some(self.config.request_timeout);
        // Counted from each request, not from when its pooled connection
        // last saw traffic.
        config.reset_reader_on_write = true;
        let target: Arc<dyn SyncTarget> = Arc::new(KubeTarget::new(config)?);
        self.targets
            .lock()
            .await
            .insert(cluster.to_owned(), target.clone());
        Ok(target)
    }

    /// Whether `revision` is still the DIG's current, deployed revision.
    fn current(&self, handoff: &ContextHandoff) -> bool {
        self.contexts
            .state(&handoff.dig)
            .map(|s| {
                s.revision == handoff.revision
                    && matches!(s.state, DeployState::Instantiated | DeployState::Updated)
            })
            .unwrap_or(false)
    }

    async fn deploy(self: &Arc<Self>, handoff: &ContextHandoff) -> Result<(), RsyncError> {
        let context = self.contexts.read(&handoff.dig, handoff.revision)?;
        for app_name in &context.meta.app_order {
            let Some(app) = context.apps.iter().find(|a| &a.name == app_name) else {
                continue;
            };
            let waited_on = waited_on(&context, app_name);
            self.each_cluster(handoff, app, Work::Sync).await?;
            if let Some(wait) = waited_on {
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
        }
        if let Some(previous) = handoff.previous {
            self.remove_dropped(handoff, previous, &context).await?;
        }
        Ok(())
    }

    /// After an update or rollback: deletes what revision `previous` put on
    /// a cluster and the new context no longer has there.
    async fn remove_dropped(
        self: &Arc<Self>,
        handoff: &ContextHandoff,
        previous: u64,
        current: &StoredContext,
    ) -> Result<(), RsyncError> {
        let old = self.contexts.read(&handoff.dig, previous)?;
        for app in &old.apps {
            let new_app = current.apps.iter().find(|a| a.name == app.name);
            for placement in &app.placement {
                let kept: Vec<String> = new_app
                    .filter(|a| a.placement.iter().any(|p| p.cluster == placement.cluster))
                    .map(|a| {
                        a.resources_on(&placement.cluster)
                            .iter()
                            .map(|r| r.key.to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                let dropped = self
                    .leftovers(
                        handoff,
                        &app.name,
                        &placement.cluster,
                        app.resources_on(&placement.cluster),
                        &kept,
                    )
                    .await;
                if dropped.is_empty() {
                    continue;
                }
                let mut dropped_app = app.clone();
                dropped_app.base = dropped;
                dropped_app.diffs.clear();
                let record = ContextHandoff {
                    dig: handoff.dig.clone(),
                    revision: previous,
                    previous: None,
                };
                self.remove_from_cluster(&record, &dropped_app, &placement.cluster)
                    .await?;
            }
        }
        Ok(())
    }

    /// What is on `cluster` for `app` and not in `kept`: found by our labels,
    /// for every kind the previous revision had there (which also finds
    /// objects a crash left behind), or from that revision itself where the
    /// target cannot list.
    async fn leftovers(
        &self,
        handoff: &ContextHandoff,
        app: &str,
        cluster: &ClusterRef,
        previous: Vec<&Resource>,
        kept: &[String],
    ) -> Vec<Resource> {
        let selector = format!(
            "{DIG_LABEL}={},{APP_LABEL}={app}",
            handoff.dig.replace('/', ".")
        );
        let mut found: Vec<Resource> = Vec::new();
        let mut kinds_seen: Vec<(String, String)> = Vec::new();
        for like in &previous {
            let kind = (like.api_version.clone(), like.key.kind.clone());
            if kinds_seen.contains(&kind) {
                continue;
            }
            kinds_seen.push(kind);
            let listed = match self.target(cluster).await {
                Ok(target) => target.list_labelled(like, &selector).await,
                Err(error) => Err(error),
            };
            match listed {
                Ok(Some(objects)) => found.extend(objects),
                // The target cannot list, or did not answer: the previous revision says what was there.
                _ => found.extend(
                    previous
                        .iter()
                        .filter(|r| r.key.kind == like.key.kind)
                        .map(|r| (*r).clone()),
                ),
            }
        }
        found.retain(|r| !kept.contains(&r.key.to_string()));
        found.dedup_by(|a, b| a.key == b.key && a.namespace == b.namespace);
        found
    }

    /// Applies `app`'s resources on `cluster` in order, then waits (bounded)
    /// for them to be ready, recording status as it goes.
    async fn sync_cluster(
        &self,
        handoff: &ContextHandoff,
        app: &StoredApp,
        cluster: &ClusterRef,
    ) -> Result<(), RsyncError> {
        let resources: Vec<Resource> = app.resources_on(cluster).into_iter().cloned().collect();
        let labels = labels(handoff, &app.name);
        let mut statuses: Vec<(String, ResourceStatus)> = Vec::new();
        for resource in &resources {
            let outcome = self
                .with_retries(handoff, cluster, |target| {
                    let resource = resource.clone();
                    let labels = labels.clone();
                    async move { target.apply(&resource, &labels).await }
                })
                .await;
            let status = match outcome {
                Ok(()) => ResourceStatus::applied(resource),
                Err(error) => ResourceStatus::failed(resource, error.to_string()),
            };
            // What follows a CRD may be of its kind: wait until it is Established.
            if resource.key.kind == "CustomResourceDefinition"
                && status.deployed == Deployed::Applied
            {
                self.wait_ready(handoff, cluster, resource).await;
            }
            statuses.push((resource.key.to_string(), status));
        }
        self.contexts.put_statuses(
            &handoff.dig,
            handoff.revision,
            &app.name,
            cluster,
            &statuses,
        )?;
        for (key, status) in &mut statuses {
            let Some(resource) = resources.iter().find(|r| r.key.to_string() == *key) else {
                continue;
            };
            if status.deployed == Deployed::Applied
                && (target::ready_once_applied(&resource.key.kind)
                    || self.wait_ready(handoff, cluster, resource).await)
            {
                status.ready = Readiness::Ready;
            }
        }
        self.contexts.put_statuses(
            &handoff.dig,
            handoff.revision,
            &app.name,
            cluster,
            &statuses,
        )?;
        Ok(())
    }

    /// Polls until `resource` is ready on `cluster` (bounded); whether it is.
    async fn wait_ready(
        &self,
        handoff: &ContextHandoff,
        cluster: &ClusterRef,
        resource: &Resource,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + self.config.ready_timeout;
        while tokio::time::Instant::now() < deadline && self.current(handoff) {
            if let Ok(target) = self.target(cluster).await
                && target.ready(resource).await.unwrap_or(false)
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// Runs `attempt` against the cluster's target, retrying transient
    /// failures with bounded exponential backoff and jitter; the cluster is
    /// marked Retrying meanwhile and Available once it answers.
    async fn with_retries<F, Fut>(
        &self,
        handoff: &ContextHandoff,
        cluster: &ClusterRef,
        attempt: F,
    ) -> Result<(), SyncError>
    where
        F: Fn(Arc<dyn SyncTarget>) -> Fut,
        Fut: std::future::Future<Output = Result<(), SyncError>>,
    {
        let (mut delay, ceiling) = self.config.backoff;
        let mut tries = 0;
        loop {
            let result = match self.target(cluster).await {
                Ok(target) => attempt(target).await,
                Err(error) => Err(error),
            };
            match result {
                Ok(()) => {
                    let _ = self.contexts.put_connectivity(
                        &handoff.dig,
                        handoff.revision,
                        cluster,
                        Connectivity::Available,
                    );
                    return Ok(());
                }
                Err(error)
                    if error.is_transient()
                        && tries + 1 < self.config.attempts
                        && self.current(handoff) =>
                {
                    tries += 1;
                    let _ = self.contexts.put_connectivity(
                        &handoff.dig,
                        handoff.revision,
                        cluster,
                        Connectivity::Retrying,
                    );
                    tracing::warn!(%cluster, %error, attempt = tries, "cluster not reachable; retrying");
                    let jitter = delay.mul_f64(rand_fraction() * 0.5);
                    tokio::time::sleep(delay + jitter).await;
                    delay = (delay * 2).min(ceiling);
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn terminate(self: &Arc<Self>, handoff: &ContextHandoff) -> Result<(), RsyncError> {
        let context = self.contexts.read(&handoff.dig, handoff.revision)?;
        for app_name in context.meta.app_order.iter().rev() {
            let Some(app) = context.apps.iter().find(|a| &a.name == app_name) else {
                continue;
            };
            self.each_cluster(handoff, app, Work::Remove).await?;
        }
        Ok(())
    }

    /// Does `work` for `app` on each of its clusters in parallel, at most
    /// `parallel_clusters` at a time.
    async fn each_cluster(
        self: &Arc<Self>,
        handoff: &ContextHandoff,
        app: &StoredApp,
        work: Work,
    ) -> Result<(), RsyncError> {
        let mut tasks = Vec::new();
        for placement in &app.placement {
            let inner = self.clone();
            let handoff = handoff.clone();
            let app = app.clone();
            let cluster = placement.cluster.clone();
            tasks.push(tokio::spawn(async move {
                let _permit = inner.parallel.clone().acquire_owned().await;
                match work {
                    Work::Sync => inner.sync_cluster(&handoff, &app, &cluster).await,
                    Work::Remove => inner.remove_from_cluster(&handoff, &app, &cluster).await,
                }
            }));
        }
        for task in tasks {
            match task.await {
                Ok(result) => result?,
                Err(error) => tracing::error!(%error, "cluster task failed"),
            }
        }
        Ok(())
    }

    /// Deletes `app`'s resources from `cluster` in reverse order and waits
    /// (bounded) until each is gone.
    async fn remove_from_cluster(
        &self,
        handoff: &ContextHandoff,
        app: &StoredApp,
        cluster: &ClusterRef,
    ) -> Result<(), RsyncError> {
        let mut statuses = Vec::new();
        for resource in app.resources_on(cluster).into_iter().rev() {
            let deadline = tokio::time::Instant::now() + self.config.ready_timeout;
            let mut status = ResourceStatus::failed(resource, "not deleted in time".into());
            while tokio::time::Instant::now() < deadline {
                let gone = match self.target(cluster).await {
                    Ok(target) => target.delete(resource).await,
                    Err(error) => Err(error),
                };
                match gone {
                    Ok(true) => {
                        status = ResourceStatus::deleted(resource);
                        break;
                    }
                    Ok(false) => {}
                    Err(error) if !error.is_transient() => {
                        status = ResourceStatus::failed(resource, error.to_string());
                        break;
                    }
                    Err(_) => {}
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            statuses.push((resource.key.to_string(), status));
        }
        self.contexts.put_statuses(
            &handoff.dig,
            handoff.revision,
            &app.name,
            cluster,
            &statuses,
        )?;
        Ok(())
    }
}

/// What [`Inner::each_cluster`] does on a cluster.
#[derive(Debug, Clone, Copy)]
enum Work {
    Sync,
    Remove,
}

/// Seconds to wait after `app` when a later app waits for it as Ready.
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

/// A fraction in [0, 1) for jitter; the clock's nanoseconds are random enough.
fn rand_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}
