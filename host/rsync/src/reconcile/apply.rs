//! Syncing one app on one cluster, phase by phase: its pre-install hooks,
//! what the cluster holds, the applies (only what is missing or drifted,
//! refusing what someone else owns), the statuses, the wait for readiness,
//! its post-install hooks.

use std::collections::{BTreeSet, HashMap};

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;

use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{Deployed, Readiness, ResourceStatus, StoredApp};

use super::claim::Refusal;
use super::cluster::ClusterWork;
use super::csr;
use super::hooks::Hooks;
use super::resource::{Synced, ready_now};
use super::settled::{Outcome, Settled};
use crate::error::RsyncError;
use crate::owner::{self, labels};
use crate::target::{Labels, SyncError};

/// Makes the cluster hold the resources of the context's app `app` (its
/// index), then waits (bounded) for them to be ready, recording status as
/// it goes.
pub(super) async fn sync(work: ClusterWork, app: usize) -> Result<Outcome, RsyncError> {
    let _permit = work.reconciler.cluster_slot().await;
    let app = &work.context.apps[app];
    let mut resources = app.resources_on(&work.cluster);
    // CRDs, then namespaces, then the rest (a cluster's own additions
    // come after the base, whatever their kind).
    resources.sort_by_key(|r| r.apply_rank());
    let labels = labels(&work.key, Some(&app.name));
    let recorded = work.recorded(&app.name).await?;
    let kinds = resources
        .iter()
        .map(|r| (r.api_version.clone(), r.key.kind.clone()))
        .collect();
    if at_rest(&work, &app.name, &resources, &kinds, &recorded) {
        work.reconciler.metrics.look_skipped();
        return Ok(Outcome {
            settled: Settled::Resync,
            applied: 0,
        });
    }
    let sync = AppSync {
        work: &work,
        app,
        resources: &resources,
        kinds,
        labels,
        recorded,
    };
    sync.run().await
}

/// Whether a resync may leave `app` on this cluster alone: each of its
/// objects was applied and is ready, and the watches have reported every
/// change to them since they were last read.
fn at_rest(
    work: &ClusterWork,
    app: &str,
    resources: &[&Resource],
    kinds: &BTreeSet<(String, String)>,
    recorded: &HashMap<String, ResourceStatus>,
) -> bool {
    resources.iter().all(|resource| {
        recorded
            .get(&resource.key.to_string())
            .is_some_and(|s| s.deployed == Deployed::Applied && s.ready == Readiness::Ready)
    }) && work.watched_since_look(Some(app), kinds)
}

/// One app's sync on one cluster.
struct AppSync<'w> {
    work: &'w ClusterWork,
    app: &'w StoredApp,
    /// Its resources on this cluster, in apply order.
    resources: &'w [&'w Resource],
    /// Their kinds (`apiVersion`, `kind`).
    kinds: BTreeSet<(String, String)>,
    /// What its objects carry here.
    labels: Labels,
    /// Its statuses as stored, kept up to date with each write.
    recorded: HashMap<String, ResourceStatus>,
}

impl AppSync<'_> {
    async fn run(mut self) -> Result<Outcome, RsyncError> {
        // A chart's pre-install hooks finish before its first apply here.
        if let Err(failed) = Hooks::on(self.work)
            .run(self.app, HookEvent::PreInstall)
            .await?
        {
            let waiting = format!("waiting for the app's hooks: {}", failed.message);
            return self.give_up(&waiting).await;
        }
        let live = match self.read_live(&self.kinds).await {
            Ok(live) => live,
            Err(error) => return self.give_up(&error.to_string()).await,
        };
        let mut settled = Settled::Resync;
        let mut results = self.apply(&live, &mut settled).await;
        self.approve_requests(&mut results).await;
        // Watched from now on: started after the applies, so the watch
        // does not carry their events.
        for (api_version, kind) in &self.kinds {
            let watches = &self.work.reconciler.watches;
            watches.watch(&self.work.cluster, api_version, kind);
        }
        self.record_progress(&results).await?;
        let mut statuses = self.record_ready_now(&results).await?;
        self.await_ready(&mut statuses).await?;
        settled = settled.max(self.keep_certificates(&statuses).await);
        settled = settled.max(self.post_install(&statuses).await?);
        Ok(Outcome {
            settled,
            applied: results.iter().filter(|(_, s)| s.applied).count(),
        })
    }

    /// Records every resource as failed for `why`: nothing was applied.
    async fn give_up(mut self, why: &str) -> Result<Outcome, RsyncError> {
        let statuses: Vec<_> = self
            .resources
            .iter()
            .map(|r| (r.key.to_string(), ResourceStatus::failed(r, why.to_owned())))
            .collect();
        self.work
            .record(&self.app.name, &mut self.recorded, &statuses)
            .await?;
        Ok(Outcome {
            settled: Settled::Incomplete,
            applied: 0,
        })
    }

    /// This app's objects of `kinds` on the cluster, by `name+Kind`; in a
    /// migrate, the source DIG's too, which are ours to take over.
    async fn read_live(
        &self,
        kinds: &BTreeSet<(String, String)>,
    ) -> Result<HashMap<String, Resource>, SyncError> {
        let mut live = self
            .work
            .look(Some(&self.app.name), kinds, &self.labels)
            .await?;
        if let Some(source) = &self.work.context.meta.adopt_from {
            let theirs = owner::labels(source, Some(&self.app.name));
            for (key, object) in self.work.list(kinds, &theirs).await? {
                live.entry(key).or_insert(object);
            }
        }
        Ok(live)
    }

    /// Applies each rank in turn; within one, several applies at once (an
    /// API server serves concurrent requests faster than one stream).
    /// Something worth trying again makes the sync `Incomplete`.
    async fn apply(
        &self,
        live: &HashMap<String, Resource>,
        settled: &mut Settled,
    ) -> Vec<(String, Synced)> {
        let mut results: Vec<(String, Synced)> = Vec::with_capacity(self.resources.len());
        // The app's namespaces that were not made (someone else's, say),
        // and why: nothing of the app goes into them.
        let mut not_made: HashMap<String, (String, bool)> = HashMap::new();
        for wave in self
            .resources
            .chunk_by(|a, b| a.apply_rank() == b.apply_rank())
        {
            let synced = self.apply_wave(wave, live, &not_made).await;
            for (resource, synced) in wave.iter().zip(synced) {
                if synced.transient {
                    *settled = Settled::Incomplete;
                }
                if resource.key.kind == "Namespace"
                    && resource.api_version == "v1"
                    && synced.status.deployed == Deployed::Failed
                {
                    let why = synced.status.message.clone().unwrap_or_default();
                    not_made.insert(resource.key.name.clone(), (why, synced.transient));
                }
                if synced.status.deployed == Deployed::Failed {
                    self.work.reconciler.metrics.object("failed");
                } else if synced.applied {
                    self.work.reconciler.metrics.object("applied");
                }
                // What follows a CRD may be of its kind: wait until it is Established.
                if resource.key.kind == "CustomResourceDefinition"
                    && synced.status.deployed == Deployed::Applied
                    && synced.applied
                {
                    self.work.wait_ready(resource).await;
                }
                results.push((resource.key.to_string(), synced));
            }
        }
        results
    }

    /// Syncs the resources of one rank, `parallel_applies` at a time; what
    /// became of each, in their order.
    async fn apply_wave(
        &self,
        wave: &[&Resource],
        live: &HashMap<String, Resource>,
        not_made: &HashMap<String, (String, bool)>,
    ) -> Vec<Synced> {
        let at_once = self.work.reconciler.config.parallel_applies.max(1);
        let mut waiting = wave.iter();
        let mut in_flight = FuturesOrdered::new();
        let mut synced = Vec::with_capacity(wave.len());
        loop {
            while in_flight.len() < at_once {
                let Some(resource) = waiting.next() else {
                    break;
                };
                in_flight.push_back(self.apply_one(resource, live, not_made));
            }
            match in_flight.next().await {
                Some(done) => synced.push(done),
                None => break,
            }
        }
        synced
    }

    /// Syncs `resource`, unless it goes into a namespace that was not made.
    async fn apply_one(
        &self,
        resource: &Resource,
        live: &HashMap<String, Resource>,
        not_made: &HashMap<String, (String, bool)>,
    ) -> Synced {
        let key = resource.key.to_string();
        let before = self.recorded.get(&key);
        let namespace = self.work.namespace_of(resource);
        if let Some((why, transient)) = namespace.and_then(|n| not_made.get(n)) {
            let refused = Refusal {
                message: format!(
                    "its namespace {} was not made: {why}",
                    namespace.unwrap_or_default()
                ),
                transient: *transient,
            };
            let kept_drift = before.and_then(|b| b.drift.clone());
            return Synced::refused(resource, refused, kept_drift);
        }
        let live = live.get(&key).filter(|l| self.work.same_place(resource, l));
        self.work
            .sync_resource(&self.app.name, resource, &self.labels, live, before)
            .await
    }

    /// Requests for certificates: approved here, as EMCO's rsync does.
    async fn approve_requests(&self, results: &mut [(String, Synced)]) {
        for (resource, (_, synced)) in self.resources.iter().zip(results) {
            if csr::approves(self.work, resource)
                && synced.status.deployed == Deployed::Applied
                && let Err(message) = csr::approve(self.work, resource).await
            {
                synced.status = ResourceStatus::failed(resource, message);
            }
        }
    }

    /// Progress first: what was applied (or failed) is there (or not);
    /// readiness may take a while.
    async fn record_progress(&mut self, results: &[(String, Synced)]) -> Result<(), RsyncError> {
        let progress: Vec<(String, ResourceStatus)> = results
            .iter()
            .filter(|(_, s)| s.applied || s.status.deployed != Deployed::Applied)
            .map(|(key, synced)| (key.clone(), synced.status.clone()))
            .collect();
        self.work
            .record(&self.app.name, &mut self.recorded, &progress)
            .await
    }

    /// What is ready now is recorded so before anything is waited for: a
    /// workload that takes its time does not hide the rest. The statuses.
    async fn record_ready_now(
        &mut self,
        results: &[(String, Synced)],
    ) -> Result<Vec<(String, ResourceStatus)>, RsyncError> {
        let mut statuses: Vec<(String, ResourceStatus)> = results
            .iter()
            .map(|(key, synced)| (key.clone(), synced.status.clone()))
            .collect();
        for ((resource, (_, synced)), (_, status)) in
            self.resources.iter().zip(results).zip(&mut statuses)
        {
            if status.deployed == Deployed::Applied && ready_now(resource, synced) {
                status.ready = Readiness::Ready;
            }
        }
        self.work
            .record(&self.app.name, &mut self.recorded, &statuses)
            .await?;
        Ok(statuses)
    }

    /// Waits (bounded) for each applied resource not ready yet, recording
    /// each as it becomes ready.
    async fn await_ready(
        &mut self,
        statuses: &mut [(String, ResourceStatus)],
    ) -> Result<(), RsyncError> {
        for (resource, (key, status)) in self.resources.iter().zip(statuses) {
            if status.deployed == Deployed::Applied
                && status.ready != Readiness::Ready
                && self.work.wait_ready(resource).await
            {
                status.ready = Readiness::Ready;
                let ready = [(key.clone(), status.clone())];
                self.work
                    .record(&self.app.name, &mut self.recorded, &ready)
                    .await?;
            }
        }
        Ok(())
    }

    /// Keeps the certificates issued for the requests rsync approved.
    async fn keep_certificates(&self, statuses: &[(String, ResourceStatus)]) -> Settled {
        let mut settled = Settled::Idle;
        for (resource, (_, status)) in self.resources.iter().zip(statuses) {
            if csr::approves(self.work, resource)
                && status.ready == Readiness::Ready
                && let Err(error) = csr::keep_certificate(self.work, resource).await
            {
                let (key, cluster) = (&self.work.key, &self.work.cluster);
                tracing::warn!(target = %key, cluster = %cluster, %error, "could not keep an issued certificate");
                settled = Settled::Incomplete;
            }
        }
        settled
    }

    /// Its post-install hooks once everything is ready here.
    async fn post_install(
        &self,
        statuses: &[(String, ResourceStatus)],
    ) -> Result<Settled, RsyncError> {
        if statuses.iter().all(|(_, s)| s.ready == Readiness::Ready)
            && let Err(failed) = Hooks::on(self.work)
                .run(self.app, HookEvent::PostInstall)
                .await?
        {
            let (key, cluster) = (&self.work.key, &self.work.cluster);
            tracing::warn!(target = %key, cluster = %cluster, app = %self.app.name, error = %failed.message, "post-install hook failed");
            return Ok(Settled::Incomplete);
        }
        Ok(Settled::Idle)
    }
}
