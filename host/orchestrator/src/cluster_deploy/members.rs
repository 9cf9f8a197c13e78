//! The `join`, `delete` and `upgrade` actions and their runs: machines
//! joining and leaving (Eggo's join and delete), a new version rolled out.
//! The deploy file stays the record of the cluster's machines: a join lays
//! Eggo's join file into it before its run (the run sets up only the new
//! machines), a delete takes the machines out of it once its run has
//! given them back.

use wasmco_core::eggo::{DeployConfig, JoinFile};
use wasmco_core::wire::{ClusterDeploymentAction, ClusterDeploymentStatus};
use wasmco_core::{FieldError, Kind};
use wasmco_store::db::Write;

use super::record::{self, RunRecord};
use super::run::ClusterDeployments;
use super::target::ClusterDeploymentRef;
use super::upload::DeployUpload;
use crate::error::OrchestratorError;

impl ClusterDeployments {
    /// `join`: `join`'s machines added to the deploy file, then a run that
    /// sets them up; answers at once with the status. A machine already
    /// in the file the same way joins again (a failed join tried again).
    pub fn join(
        &self,
        target: &ClusterDeploymentRef,
        join: &JoinFile,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        self.start(
            target,
            ClusterDeploymentAction::Join,
            |_, record, upload| {
                deployed_before(target, record)?;
                let upload = filed(target, upload)?;
                let config = raw_config(upload)?;
                let first = config.first_master().map(str::to_owned);
                if let Some(first) = first.filter(|first| join.names().contains(first)) {
                    return Err(OrchestratorError::Field(FieldError::new(
                        "masters",
                        format!("{first} is the cluster's first master; it joins nothing"),
                    )));
                }
                let grown = config.joined(join).map_err(OrchestratorError::Field)?;
                // The machines there are keep their pod slices and etcd
                // starts, written down from the file as it was.
                let (_, before) = self.prepared(target)?;
                record::save_material(&self.shared.db, &target.id(), &before.material)?;
                if grown != config {
                    self.rewrite(target, upload, &grown)?;
                }
                Ok(join.names())
            },
        )
    }

    /// `delete`: a run that drains the machines called `nodes`, takes them
    /// out of the cluster and gives them back, then takes them out of the
    /// deploy file; answers at once with the status.
    pub fn delete_nodes(
        &self,
        target: &ClusterDeploymentRef,
        nodes: &[String],
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        self.start(
            target,
            ClusterDeploymentAction::Delete,
            |_, record, upload| {
                deployed_before(target, record)?;
                let config = raw_config(filed(target, upload)?)?.with_defaults();
                check_leaving(&config, nodes).map_err(OrchestratorError::Field)?;
                Ok(nodes.to_vec())
            },
        )
    }

    /// `upgrade`: a run that rolls the deploy file as it is stored now (a
    /// new package archive) out over the machines, one at a time; answers
    /// at once with the status.
    pub fn upgrade(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        self.start(target, ClusterDeploymentAction::Upgrade, |_, record, _| {
            deployed_before(target, record)?;
            Ok(Vec::new())
        })
    }

    /// The upgrade itself.
    pub(super) fn upgrade_once(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<(), OrchestratorError> {
        let (_, deployment) = self.prepared(target)?;
        record::save_material(&self.shared.db, &target.id(), &deployment.material)?;
        let (deployment, settings, from) = (&deployment, &self.settings, record.progress.clone());
        let outcome = self.on_machines(&target.id(), record, move |report| {
            wasmco_clusters::upgrade(deployment, settings, from, report)
        })?;
        record.progress = outcome?;
        Ok(())
    }

    /// Refuses to store `file` over the deploy file of a cluster that runs
    /// when it leaves out machines of that cluster: they would be neither
    /// upgraded nor deletable, and their pod slices could be handed out
    /// again. `delete` takes machines out.
    pub fn check_replacement(
        &self,
        target: &ClusterDeploymentRef,
        file: &[u8],
    ) -> Result<(), OrchestratorError> {
        let record = record::load(&self.shared.db, &target.id())?;
        let material = record::material(&self.shared.db, &target.id())?;
        let (true, Some(material)) = (record.registered, material) else {
            return Ok(());
        };
        let upload = DeployUpload::from_bytes(file).map_err(OrchestratorError::Field)?;
        let config = raw_config(&upload)?.with_defaults();
        let missing: Vec<&str> = material
            .nodes
            .keys()
            .filter(|name| !config.has_machine(name))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(OrchestratorError::Conflict(format!(
            "the deploy file leaves out {} of cluster deployment {}, which the cluster runs; \
             keep them in the file, or take them out of the cluster first (`wasmco cluster \
             delete --id {} NODE...`)",
            missing.join(", "),
            target.name,
            target.name
        )))
    }

    /// The join itself, over the machines the record names.
    pub(super) fn join_once(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<(), OrchestratorError> {
        let (_, deployment) = self.prepared(target)?;
        record::save_material(&self.shared.db, &target.id(), &deployment.material)?;
        let (deployment, settings) = (&deployment, &self.settings);
        let (from, joining) = (record.progress.clone(), record.scope.clone());
        let outcome = self.on_machines(&target.id(), record, move |report| async move {
            wasmco_clusters::join(deployment, settings, from, report, &joining).await
        })?;
        record.progress = outcome?;
        Ok(())
    }

    /// The delete itself: the machines first, then the file and the
    /// cluster's certificates without them, so a delete that fails on a
    /// machine is tried again over the same machines.
    pub(super) fn remove_once(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<(), OrchestratorError> {
        let (_, deployment) = self.prepared(target)?;
        // A run taken up after the file was rewritten has only the
        // bookkeeping left.
        let leaving: Vec<String> = record
            .scope
            .iter()
            .filter(|name| deployment.topology.machine(name).is_some())
            .cloned()
            .collect();
        if !leaving.is_empty() {
            let (deployment, settings) = (&deployment, &self.settings);
            let from = record.progress.clone();
            let outcome = self.on_machines(&target.id(), record, move |report| async move {
                wasmco_clusters::remove_nodes(deployment, settings, from, report, &leaving).await
            })?;
            record.progress = outcome?;
            let (_, upload) = self.inputs(target)?;
            let config = raw_config(&upload)?;
            self.rewrite(target, &upload, &config.without(&record.scope))?;
        }
        let mut material = deployment.material.clone();
        material.forget(&record.scope);
        record::save_material(&self.shared.db, &target.id(), &material)?;
        for node in &record.scope {
            record.progress.nodes.remove(node);
        }
        Ok(())
    }

    /// Stores `config` as the deployment's deploy file (with the same
    /// login), its summary in the resource's status with it.
    pub(super) fn rewrite(
        &self,
        target: &ClusterDeploymentRef,
        upload: &DeployUpload,
        config: &DeployConfig,
    ) -> Result<(), OrchestratorError> {
        let text = wasmco_core::eggo::to_yaml(config).map_err(OrchestratorError::Field)?;
        let changed = DeployUpload {
            deploy_file: text,
            private_key: upload.private_key.clone(),
        };
        let (checked, _) = changed.checked().map_err(OrchestratorError::Field)?;
        let id = target.id();
        let mut body = self.shared.db.get(&id)?;
        body["status"] = DeployUpload::summary(&checked);
        let stored = serde_json::json!({"metadata": body["metadata"], "spec": body["spec"]});
        let document: wasmco_core::Document = serde_json::from_value(stored)
            .map_err(|e| OrchestratorError::Input(format!("the stored deployment: {e}")))?;
        let parent = &id.path[..id.path.len() - 1];
        let references = wasmco_core::check_spec(Kind::ClusterDeployment, parent, &document)
            .map_err(OrchestratorError::Field)?;
        self.shared.db.update(
            &id,
            Write {
                body,
                references,
                file: Some(changed.to_bytes()),
            },
        )?;
        Ok(())
    }
}

/// Refuses a join or delete on a cluster no deploy has finished.
fn deployed_before(
    target: &ClusterDeploymentRef,
    record: &RunRecord,
) -> Result<(), OrchestratorError> {
    if record.registered {
        return Ok(());
    }
    Err(OrchestratorError::Conflict(format!(
        "cluster deployment {} has no running cluster yet (no deploy of it finished); deploy it \
         first",
        target.name
    )))
}

/// The deploy file a join or delete works on; every deployed cluster has one.
fn filed<'a>(
    target: &ClusterDeploymentRef,
    upload: Option<&'a DeployUpload>,
) -> Result<&'a DeployUpload, OrchestratorError> {
    upload.ok_or_else(|| {
        OrchestratorError::Input(format!(
            "cluster deployment {} has no deploy file",
            target.name
        ))
    })
}

/// The deploy file as stored, before Eggo's defaults: what is written back.
fn raw_config(upload: &DeployUpload) -> Result<DeployConfig, OrchestratorError> {
    wasmco_core::eggo::parse(&upload.deploy_file).map_err(|e| {
        OrchestratorError::Field(FieldError::new(format!("file.{}", e.field), e.reason))
    })
}

/// Why `nodes` may not leave the cluster `config` (defaults filled in)
/// lays out, if they may not.
fn check_leaving(config: &DeployConfig, nodes: &[String]) -> Result<(), FieldError> {
    if nodes.is_empty() {
        return Err(FieldError::new("nodes", "names no machine to delete"));
    }
    for (index, name) in nodes.iter().enumerate() {
        let at = format!("nodes[{index}]");
        if !config.has_machine(name) {
            return Err(FieldError::new(
                at,
                format!("{name} is not a machine of the cluster"),
            ));
        }
        if config.first_master() == Some(name.as_str()) {
            return Err(FieldError::new(
                at,
                format!(
                    "{name} is the first master, which the cluster is reached and joined \
                     through; it leaves only with the whole cluster (cleanup)"
                ),
            ));
        }
    }
    let etcds_left = config.etcds.iter().any(|host| !nodes.contains(&host.name));
    if !etcds_left {
        return Err(FieldError::new(
            "nodes",
            "would leave the cluster without an etcd member",
        ));
    }
    Ok(())
}
