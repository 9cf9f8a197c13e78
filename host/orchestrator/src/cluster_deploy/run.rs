//! The `deploy` action and the run it starts: checked and recorded as
//! `Deploying` under the deployment's action lock, then run on a thread of
//! its own (under the deployment's run lock, held across hosts) that keeps
//! the progress after every step and registers the cluster at the end.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wasmco_clusters::{DeployProgress, DeploySettings, Deployment, Report};
use wasmco_core::Kind;
use wasmco_core::specs::ClusterDeploymentSpec;
use wasmco_core::wire::{ClusterDeploymentAction, ClusterDeploymentState, ClusterDeploymentStatus};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::appcontext::{ContextError, now};
use wasmco_store::db::ResourceId;
use wasmco_store::hosts::{HostEvent, HostGroup};

use super::addons::{self, ClusterAddons};
use super::record::{self, RunRecord};
use super::register::{self, NewCluster};
use super::target::ClusterDeploymentRef;
use super::upload::DeployUpload;
use crate::error::OrchestratorError;
use crate::shared::Shared;

/// The cluster deployments: their action, their status, their runs.
#[derive(Clone)]
pub struct ClusterDeployments {
    pub(crate) shared: Shared,
    pub(crate) policy: Arc<KubeconfigPolicy>,
    /// This host's id among the hosts sharing the store, if any.
    pub(crate) host: Option<String>,
    pub(crate) settings: DeploySettings,
    /// Where an Eggops `Infrastructure`'s relative `srcPackages` are.
    pub(crate) package_dir: Option<std::path::PathBuf>,
    /// The deployments (by run lock) this process has a run thread for,
    /// running or waiting for the lock: one each is enough.
    pub(crate) threads: Arc<Mutex<BTreeSet<String>>>,
}

/// The set, whatever a panicking holder left in it: it is only added to
/// and taken from.
fn lock_set(set: &Mutex<BTreeSet<String>>) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
    set.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ClusterDeployments {
    /// `deploy`: starts a run (or resumes a stopped one, or converges a
    /// deployed cluster again) and answers at once with the status.
    pub fn deploy(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        self.start(target, ClusterDeploymentAction::Deploy, |spec, record, _| {
            let cluster = spec.cluster_name(&target.name);
            if !record.registered && register::exists(&self.shared.db, &target.provider, cluster)? {
                return Err(OrchestratorError::Conflict(format!(
                    "cluster {cluster} is already registered under provider {}; name another in \
                     spec.cluster, or delete that one",
                    target.provider
                )));
            }
            Ok(Vec::new())
        })
    }

    /// Starts `action`'s run under the deployment's action lock, once its
    /// state allows it, its file still passes (the server's files, the
    /// package archive, may have changed since the upload) and `check`
    /// has nothing against it; `check` answers with the machines a join
    /// or delete works on. Answers at once with the status.
    pub(super) fn start(
        &self,
        target: &ClusterDeploymentRef,
        action: ClusterDeploymentAction,
        check: impl FnOnce(
            &ClusterDeploymentSpec,
            &mut RunRecord,
            Option<&DeployUpload>,
        ) -> Result<Vec<String>, OrchestratorError>,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        let id = target.id();
        let _action = self.shared.lock(&target.lock_key("action"))?;
        let (spec, upload, mut record, next) = self.admitted(target, action)?;
        let scope = check(&spec, &mut record, upload.as_ref())?;
        record.begin(next, self.host.clone(), scope);
        record::save(&self.shared.db, &id, &record)?;
        // A thread of this process already waiting for the run lock (a
        // stopped host's run being taken up) runs this one too.
        self.spawn(target.clone())?;
        self.answer(target, &spec, record)
    }

    /// Whether `action` may start now: the state allows it and the file
    /// still passes (the server's files, the package archive, may have
    /// changed since the upload). Its inputs, its record and the state it
    /// leads to when it may; a requested cluster whose machines are still
    /// to be picked has no file yet.
    pub(super) fn admitted(
        &self,
        target: &ClusterDeploymentRef,
        action: ClusterDeploymentAction,
    ) -> Result<
        (
            ClusterDeploymentSpec,
            Option<DeployUpload>,
            RunRecord,
            ClusterDeploymentState,
        ),
        OrchestratorError,
    > {
        let (spec, record) = self.spec_and_record(target)?;
        let next = record
            .state
            .after(action)
            .map_err(OrchestratorError::Conflict)?;
        if spec.request.is_some() {
            if matches!(
                action,
                ClusterDeploymentAction::Join | ClusterDeploymentAction::Delete
            ) {
                return Err(OrchestratorError::Conflict(format!(
                    "cluster deployment {} is made from a request: its nodes are the machines \
                     picked for it, not joined or deleted one by one",
                    target.name
                )));
            }
            if record.machines.is_none() {
                // Its old file (if any) names machines it no longer holds.
                if action != ClusterDeploymentAction::Deploy {
                    return Err(OrchestratorError::Conflict(format!(
                        "cluster deployment {} holds no machines: there is nothing to {}",
                        target.name,
                        action.route()
                    )));
                }
                return Ok((spec, None, record, next));
            }
        }
        let (_, upload) = self.inputs(target)?;
        upload.checked().map_err(OrchestratorError::Field)?;
        Ok((spec, Some(upload), record, next))
    }

    /// Where the deployment is.
    pub fn status(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        let (spec, record) = self.spec_and_record(target)?;
        self.answer(target, &spec, record)
    }

    /// Refuses to change or forget a deployment while it runs: the run
    /// reads its file at each step.
    pub fn check_idle(&self, target: &ClusterDeploymentRef) -> Result<(), OrchestratorError> {
        let record = record::load(&self.shared.db, &target.id())?;
        if record.state.is_running() {
            return Err(OrchestratorError::Deployed(format!(
                "cluster deployment {} is {}; wait for its run to end before changing or deleting it",
                target.name, record.state
            )));
        }
        Ok(())
    }

    /// Takes up every run left `Deploying` or `CleaningUp`; returns how
    /// many. A run waits for the deployment's run lock: one a live host is
    /// running ends there (the state is no longer running once it has the
    /// lock), and a stopped host's lock goes with its lease, so its run
    /// goes on here (on etcd a restarted host has a new id: the run is not
    /// "its own").
    pub fn resume(&self) -> Result<usize, OrchestratorError> {
        self.take_up(|_| true)
    }

    /// Takes up the runs of hosts that are gone (`live` are the hosts
    /// there now): called when the hosts change, so a run whose host died
    /// goes on on a survivor once that host's lease has run out, without
    /// waiting for a host to start.
    pub fn take_over(&self, live: &BTreeSet<String>) -> Result<usize, OrchestratorError> {
        self.take_up(|record| record.host.as_ref().is_none_or(|host| !live.contains(host)))
    }

    fn take_up(&self, whose: impl Fn(&RunRecord) -> bool) -> Result<usize, OrchestratorError> {
        let db = &self.shared.db;
        let mut taken = 0;
        for (provider, _) in db.list(Kind::ClusterProvider, &[])? {
            for (deployment, _) in db.list(Kind::ClusterDeployment, &provider.path)? {
                let record = record::load(db, &deployment)?;
                if !record.state.is_running() || !whose(&record) {
                    continue;
                }
                if let Some(target) = ClusterDeploymentRef::of(&deployment)
                    && self.spawn(target)?
                {
                    taken += 1;
                }
            }
        }
        Ok(taken)
    }

    /// Takes up the runs of hosts that go away, for as long as this
    /// process lives: each change among the hosts is looked at once the
    /// changes stop coming for a moment.
    pub fn follow_hosts(&self, hosts: Arc<dyn HostGroup>) -> Result<(), OrchestratorError> {
        if !hosts.shared() {
            return Ok(());
        }
        let (changed, changes) = std::sync::mpsc::channel();
        hosts
            .listen(Arc::new(move |event| {
                if event == HostEvent::Membership {
                    // The thread reading them is gone only with the process.
                    let _ = changed.send(());
                }
            }))
            .map_err(ContextError::from)?;
        let deployments = self.clone();
        std::thread::Builder::new()
            .name("deploy takeover".to_owned())
            .spawn(move || {
                while changes.recv().is_ok() {
                    std::thread::sleep(Duration::from_millis(500));
                    while changes.try_recv().is_ok() {}
                    let live = match hosts.live() {
                        Ok(live) => live.into_iter().map(|host| host.id).collect(),
                        Err(error) => {
                            tracing::warn!(%error, "the live hosts could not be read");
                            continue;
                        }
                    };
                    match deployments.take_over(&live) {
                        Ok(0) => {}
                        Ok(taken) => {
                            tracing::info!(taken, "cluster runs of a stopped host taken up")
                        }
                        Err(error) => tracing::warn!(%error, "cluster runs could not be taken up"),
                    }
                }
            })
            .map(drop)
            .map_err(|e| OrchestratorError::Busy(format!("no thread to follow the hosts: {e}")))
    }

    pub(super) fn inputs(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<(ClusterDeploymentSpec, DeployUpload), OrchestratorError> {
        let id = target.id();
        let body = self.shared.db.get(&id)?;
        let spec = wasmco_core::read_spec(&body["spec"]).map_err(OrchestratorError::Field)?;
        let file = self.shared.db.file(&id)?.ok_or_else(|| {
            OrchestratorError::Input(format!(
                "cluster deployment {} has no deploy file",
                target.name
            ))
        })?;
        let upload = DeployUpload::from_bytes(&file).map_err(OrchestratorError::Field)?;
        Ok((spec, upload))
    }

    /// The deployment's spec, and what a run works from: its file checked
    /// again, its login, the cluster's keys an earlier run made.
    pub(super) fn prepared(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<(ClusterDeploymentSpec, Deployment), OrchestratorError> {
        let (spec, upload) = self.inputs(target)?;
        let (config, secret) = upload.checked().map_err(OrchestratorError::Field)?;
        let material = record::material(&self.shared.db, &target.id())?;
        Ok((spec, Deployment::prepare(&config, secret, material)?))
    }

    pub(super) fn answer(
        &self,
        target: &ClusterDeploymentRef,
        spec: &ClusterDeploymentSpec,
        record: RunRecord,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        let cluster = spec.cluster_name(&target.name);
        let addons = ClusterAddons {
            shared: &self.shared,
            provider: &target.provider,
            cluster,
        }
        .status()?;
        Ok(ClusterDeploymentStatus {
            name: target.name.clone(),
            cluster_provider: target.provider.clone(),
            cluster: cluster.to_owned(),
            state: record.state,
            run: record.run,
            scope: record.scope,
            started: record.started,
            ended: record.ended,
            host: record.host,
            progress: record.progress,
            addons,
            machines: record.machines,
        })
    }

    /// Starts a thread for `target`'s run unless this process has one;
    /// whether it started one.
    pub(super) fn spawn(&self, target: ClusterDeploymentRef) -> Result<bool, OrchestratorError> {
        let key = target.lock_key("run");
        let threads = self.threads.clone();
        if !lock_set(&threads).insert(key.clone()) {
            return Ok(false);
        }
        let runner = self.clone();
        let started = std::thread::Builder::new()
            .name(format!("deploy {}", target.name))
            .spawn({
                let (threads, key) = (threads.clone(), key.clone());
                move || {
                    runner.run(&target);
                    lock_set(&threads).remove(&key);
                }
            });
        if let Err(error) = started {
            lock_set(&threads).remove(&key);
            return Err(OrchestratorError::Busy(format!(
                "no thread for the run: {error}"
            )));
        }
        Ok(true)
    }

    /// One run, to its end: `Deployed` with the cluster registered,
    /// `CleanedUp` with it unregistered, or `Failed` with the error.
    fn run(&self, target: &ClusterDeploymentRef) {
        let id = target.id();
        let db = &self.shared.db;
        let outcome = self.shared.lock(&target.lock_key("run")).and_then(|_run| {
            let mut record = record::load(db, &id)?;
            // Another run may have ended it while this one waited.
            let kind = record.state;
            if !kind.is_running() {
                return Ok(());
            }
            record.host = self.host.clone();
            let outcome = match kind {
                ClusterDeploymentState::CleaningUp => self.clean_once(target, &mut record),
                ClusterDeploymentState::Joining => self.join_once(target, &mut record),
                ClusterDeploymentState::RemovingNodes => self.remove_once(target, &mut record),
                ClusterDeploymentState::Upgrading => self.upgrade_once(target, &mut record),
                _ => match self.machines_for(target, &mut record) {
                    // Withdrawn while it waited: the record is the cleanup's.
                    Ok(false) => return Ok(()),
                    Ok(true) => self.run_once(target, &mut record),
                    Err(error) => Err(error),
                },
            };
            record.ended = Some(now());
            match outcome {
                Ok(()) if kind == ClusterDeploymentState::CleaningUp => {
                    record.state = ClusterDeploymentState::CleanedUp;
                    record.registered = false;
                    record.machines = None;
                    tracing::info!(deployment = %target.name, "cluster cleaned up and unregistered");
                }
                Ok(()) => {
                    record.state = ClusterDeploymentState::Deployed;
                    record.registered = true;
                    tracing::info!(deployment = %target.name, run = %kind, "cluster run ended");
                }
                Err(error) => {
                    tracing::warn!(deployment = %target.name, %error, state = %kind, "cluster run stopped");
                    record.state = ClusterDeploymentState::Failed;
                    record.progress.error = Some(error.to_string());
                }
            }
            Ok(record::save(db, &id, &record)?)
        });
        if let Err(error) = outcome {
            tracing::error!(deployment = %target.name, %error, "cluster run could not keep its record");
        }
    }

    fn run_once(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<(), OrchestratorError> {
        let db = &self.shared.db;
        let id = target.id();
        let (spec, deployment) = self.prepared(target)?;
        // Read and parsed before any machine is touched: a bad `yaml`
        // package fails the run at once.
        let addons = addons::resources(&wasmco_clusters::addons(&deployment)?)?;
        // Kept before any machine sees them: a cluster's certificates are
        // made once, whatever happens to this run.
        record::save_material(db, &id, &deployment.material)?;
        let (deployment, settings, from) = (&deployment, &self.settings, record.progress.clone());
        let outcome = self.on_machines(&id, record, move |report| {
            wasmco_clusters::deploy(deployment, settings, from, report)
        })?;
        record.progress = outcome?;
        let cluster = NewCluster {
            provider: &target.provider,
            name: spec.cluster_name(&target.name),
            labels: &spec.labels,
            deployment_name: &target.name,
        };
        register::register(db, &self.policy, &cluster, deployment)?;
        self.shared
            .sync
            .cluster_changed(&wasmco_core::ClusterRef::new(
                &target.provider,
                cluster.name,
            ));
        let cluster_addons = ClusterAddons {
            shared: &self.shared,
            provider: &target.provider,
            cluster: cluster.name,
        };
        if cluster_addons.apply(addons)? {
            cluster_addons.wait_applied(self.settings.ready_timeout)?;
        }
        Ok(())
    }

    /// Runs `work` (a deploy or a cleanup over the machines) to its end on
    /// a runtime of its own, every progress it reports kept in the record.
    /// On error the record's progress is the one reported last.
    pub(super) fn on_machines<F, Fut>(
        &self,
        id: &ResourceId,
        record: &mut RunRecord,
        work: F,
    ) -> Result<Result<DeployProgress, wasmco_clusters::DeployError>, OrchestratorError>
    where
        F: FnOnce(Report) -> Fut,
        Fut: std::future::Future<Output = Result<DeployProgress, wasmco_clusters::DeployError>>,
    {
        let db = &self.shared.db;
        let report: Report = {
            let (db, id, base) = (db.clone(), id.clone(), record.clone());
            Arc::new(move |progress| {
                let mut now = base.clone();
                now.progress = progress.clone();
                if let Err(error) = record::save(&db, &id, &now) {
                    tracing::warn!(%error, "a run's progress was not kept");
                }
            })
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| OrchestratorError::Busy(format!("no runtime for the run: {e}")))?;
        let outcome = runtime.block_on(work(report));
        if outcome.is_err() {
            record.progress = record::load(db, id)?.progress;
        }
        Ok(outcome)
    }
}
