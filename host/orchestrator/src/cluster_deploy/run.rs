//! The `deploy` action and the run it starts: checked and recorded as
//! `Deploying` under the deployment's action lock, then run on a thread of
//! its own (under the deployment's run lock, held across hosts) that keeps
//! the progress after every step and registers the cluster at the end.

use std::sync::Arc;

use wasmco_clusters::{DeploySettings, Deployment, Report};
use wasmco_core::Kind;
use wasmco_core::specs::ClusterDeploymentSpec;
use wasmco_core::wire::{ClusterDeploymentAction, ClusterDeploymentState, ClusterDeploymentStatus};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::appcontext::now;

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
}

impl ClusterDeployments {
    /// `deploy`: starts a run (or resumes a stopped one, or converges a
    /// deployed cluster again) and answers at once with the status.
    pub fn deploy(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        let id = target.id();
        let _action = self.shared.lock(&target.lock_key("action"))?;
        let (spec, upload) = self.inputs(target)?;
        let mut record = record::load(&self.shared.db, &id)?;
        let next = record
            .state
            .after(ClusterDeploymentAction::Deploy)
            .map_err(OrchestratorError::Conflict)?;
        // Checked again now: the server's files (the package archive) may
        // have changed since the upload.
        upload.checked().map_err(OrchestratorError::Field)?;
        let cluster = spec.cluster_name(&target.name);
        if !record.registered && register::exists(&self.shared.db, &target.provider, cluster)? {
            return Err(OrchestratorError::Conflict(format!(
                "cluster {cluster} is already registered under provider {}; name another in \
                 spec.cluster, or delete that one",
                target.provider
            )));
        }
        record.state = next;
        record.started = Some(now());
        record.ended = None;
        record.host = self.host.clone();
        record.progress.error = None;
        record::save(&self.shared.db, &id, &record)?;
        self.spawn(target.clone())?;
        Ok(self.answer(target, &spec, record))
    }

    /// Where the deployment is.
    pub fn status(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        let body = self.shared.db.get(&target.id())?;
        let spec: ClusterDeploymentSpec =
            wasmco_core::read_spec(&body["spec"]).map_err(OrchestratorError::Field)?;
        let record = record::load(&self.shared.db, &target.id())?;
        Ok(self.answer(target, &spec, record))
    }

    /// Refuses to change or forget a deployment while it runs: the run
    /// reads its file at each step.
    pub fn check_idle(&self, target: &ClusterDeploymentRef) -> Result<(), OrchestratorError> {
        let record = record::load(&self.shared.db, &target.id())?;
        if record.state == ClusterDeploymentState::Deploying {
            return Err(OrchestratorError::Deployed(format!(
                "cluster deployment {} is deploying; wait for its run to end before changing or deleting it",
                target.name
            )));
        }
        Ok(())
    }

    /// Takes up every run left `Deploying`; returns how many. A run waits
    /// for the deployment's run lock: one a live host is running ends there
    /// (the state is no longer `Deploying` once it has the lock), and a
    /// stopped host's lock goes with its lease, so its run goes on here
    /// (on etcd a restarted host has a new id: the run is not "its own").
    pub fn resume(&self) -> Result<usize, OrchestratorError> {
        let db = &self.shared.db;
        let mut resumed = 0;
        for (provider, _) in db.list(Kind::ClusterProvider, &[])? {
            for (deployment, _) in db.list(Kind::ClusterDeployment, &provider.path)? {
                let record = record::load(db, &deployment)?;
                if record.state != ClusterDeploymentState::Deploying {
                    continue;
                }
                if let Some(target) = ClusterDeploymentRef::of(&deployment) {
                    self.spawn(target)?;
                    resumed += 1;
                }
            }
        }
        Ok(resumed)
    }

    fn inputs(
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

    fn answer(
        &self,
        target: &ClusterDeploymentRef,
        spec: &ClusterDeploymentSpec,
        record: RunRecord,
    ) -> ClusterDeploymentStatus {
        ClusterDeploymentStatus {
            name: target.name.clone(),
            cluster_provider: target.provider.clone(),
            cluster: spec.cluster_name(&target.name).to_owned(),
            state: record.state,
            started: record.started,
            ended: record.ended,
            host: record.host,
            progress: record.progress,
        }
    }

    fn spawn(&self, target: ClusterDeploymentRef) -> Result<(), OrchestratorError> {
        let runner = self.clone();
        std::thread::Builder::new()
            .name(format!("deploy {}", target.name))
            .spawn(move || runner.run(&target))
            .map(drop)
            .map_err(|e| OrchestratorError::Busy(format!("no thread for the deploy: {e}")))
    }

    /// One run, to its end: `Deployed` with the cluster registered, or
    /// `Failed` with the error.
    fn run(&self, target: &ClusterDeploymentRef) {
        let id = target.id();
        let db = &self.shared.db;
        let outcome = self.shared.lock(&target.lock_key("run")).and_then(|_run| {
            let mut record = record::load(db, &id)?;
            // Another run may have ended it while this one waited.
            if record.state != ClusterDeploymentState::Deploying {
                return Ok(());
            }
            record.host = self.host.clone();
            let outcome = self.run_once(target, &mut record);
            record.ended = Some(now());
            match outcome {
                Ok(()) => {
                    record.state = ClusterDeploymentState::Deployed;
                    record.registered = true;
                    tracing::info!(deployment = %target.name, "cluster deployed and registered");
                }
                Err(error) => {
                    tracing::warn!(deployment = %target.name, %error, "cluster deploy stopped");
                    record.state = ClusterDeploymentState::Failed;
                    record.progress.error = Some(error.to_string());
                }
            }
            Ok(record::save(db, &id, &record)?)
        });
        if let Err(error) = outcome {
            tracing::error!(deployment = %target.name, %error, "cluster deploy could not keep its record");
        }
    }

    fn run_once(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<(), OrchestratorError> {
        let db = &self.shared.db;
        let id = target.id();
        let (spec, upload) = self.inputs(target)?;
        let (config, secret) = upload.checked().map_err(OrchestratorError::Field)?;
        let deployment = Deployment::prepare(&config, secret, record::material(db, &id)?)?;
        // Kept before any machine sees them: a cluster's certificates are
        // made once, whatever happens to this run.
        record::save_material(db, &id, &deployment.material)?;
        let report: Report = {
            let (db, id, base) = (db.clone(), id.clone(), record.clone());
            Arc::new(move |progress| {
                let mut now = base.clone();
                now.progress = progress.clone();
                if let Err(error) = record::save(&db, &id, &now) {
                    tracing::warn!(%error, "a deploy's progress was not kept");
                }
            })
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| OrchestratorError::Busy(format!("no runtime for the deploy: {e}")))?;
        let outcome = runtime.block_on(wasmco_clusters::deploy(
            &deployment,
            &self.settings,
            record.progress.clone(),
            report,
        ));
        record.progress = match outcome {
            Ok(progress) => progress,
            Err(error) => {
                record.progress = record::load(db, &id)?.progress;
                return Err(error.into());
            }
        };
        let cluster = NewCluster {
            provider: &target.provider,
            name: spec.cluster_name(&target.name),
            labels: &spec.labels,
            deployment_name: &target.name,
        };
        register::register(db, &self.policy, &cluster, &deployment)?;
        self.shared
            .sync
            .cluster_changed(&wasmco_core::ClusterRef::new(
                &target.provider,
                cluster.name,
            ));
        Ok(())
    }
}
