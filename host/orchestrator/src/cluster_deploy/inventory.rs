//! The machine inventory (Eggops' API mode): a provider's machines, and
//! clusters requested by requirements instead of a deploy file. A
//! requested cluster's deploy run first picks free machines for it, under
//! the provider's inventory lock (held across hosts), waiting with the
//! reason shown for as long as too few are free; the machines are its
//! until its cleanup ends, or the deployment is deleted.

use std::collections::BTreeMap;
use std::time::Duration;

use wasmco_core::eggo::eggops::{ClusterRequestSpec, MachineLogin, MachineSpec, Picked, Role};
use wasmco_core::eggo::{Install, RolePorts};
use wasmco_core::specs::ClusterDeploymentSpec;
use wasmco_core::wire::ClusterDeploymentState;
use wasmco_core::{FieldError, Kind};
use wasmco_store::db::ResourceId;

use super::record::{self, RunRecord};
use super::run::ClusterDeployments;
use super::target::ClusterDeploymentRef;
use super::upload::DeployUpload;
use crate::error::OrchestratorError;

/// How often a waiting request looks at the machines again.
const WAIT_POLL: Duration = Duration::from_secs(2);

impl ClusterDeployments {
    /// Whether the run may go on to the machines: they are picked (now,
    /// or before), or the deployment has a deploy file of its own. Waits
    /// while too few are free; `false` when the request was withdrawn
    /// (cleaned up) while it waited.
    pub(super) fn machines_for(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<bool, OrchestratorError> {
        let (spec, _) = self.spec_and_record(target)?;
        let Some(request) = &spec.request else {
            return Ok(true);
        };
        if record.machines.is_some() {
            return Ok(true);
        }
        let id = target.id();
        loop {
            {
                let _inventory = self.shared.lock(&inventory_key(&target.provider))?;
                if record::load(&self.shared.db, &id)?.state != ClusterDeploymentState::Deploying {
                    return Ok(false);
                }
                let held = self.held(&target.provider)?;
                let machines = self.machines(&target.provider)?;
                let wanted = (&request.master_require, &request.worker_require);
                match wasmco_core::eggo::eggops::pick(&machines, &held, wanted.0, wanted.1) {
                    Ok(picked) => {
                        self.write_request_file(target, request, &machines, &picked)?;
                        tracing::info!(deployment = %target.name, ?picked, "machines picked");
                        record.machines = Some(picked);
                        record.progress.waiting = None;
                        record::save(&self.shared.db, &id, record)?;
                        return Ok(true);
                    }
                    Err(reason) => {
                        let reason = format!("waiting for machines: {reason}");
                        if record.progress.waiting.as_ref() != Some(&reason) {
                            tracing::info!(deployment = %target.name, %reason, "request waits");
                            record.progress.waiting = Some(reason);
                            record::save(&self.shared.db, &id, record)?;
                        }
                    }
                }
            }
            std::thread::sleep(WAIT_POLL);
        }
    }

    /// Ends a requested cluster's run that holds no machine (waiting for
    /// them, or stopped before any was picked): nothing is on a machine,
    /// so there is nothing to clean up. `None` when it is not such a run.
    pub(super) fn withdraw(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<Option<RunRecord>, OrchestratorError> {
        let _inventory = self.shared.lock(&inventory_key(&target.provider))?;
        let (spec, mut record) = self.spec_and_record(target)?;
        let withdrawable = matches!(
            record.state,
            ClusterDeploymentState::Deploying | ClusterDeploymentState::Failed
        );
        if spec.request.is_none() || record.machines.is_some() || !withdrawable {
            return Ok(None);
        }
        record.state = ClusterDeploymentState::CleanedUp;
        record.progress.waiting = None;
        record.ended = Some(wasmco_store::appcontext::now());
        record::save(&self.shared.db, &target.id(), &record)?;
        Ok(Some(record))
    }

    /// Refuses to forget machine `name` of `provider` while a requested
    /// cluster holds it.
    pub fn check_machine_free(&self, provider: &str, name: &str) -> Result<(), OrchestratorError> {
        let _inventory = self.shared.lock(&inventory_key(provider))?;
        match self.held(provider)?.get(name) {
            Some(deployment) => Err(OrchestratorError::Conflict(format!(
                "machine {name} is in the cluster of cluster deployment {deployment}; clean that \
                 up (or delete the deployment) first"
            ))),
            None => Ok(()),
        }
    }

    /// Refuses to forget a requested cluster that holds machines: they
    /// would be handed out again while its cluster runs on them.
    pub fn check_holds_no_machine(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<(), OrchestratorError> {
        let (_, record) = self.spec_and_record(target)?;
        match record.machines {
            Some(picked) => Err(OrchestratorError::Conflict(format!(
                "cluster deployment {} holds machines {}; clean it up first, which gives them back",
                target.name,
                picked.all().cloned().collect::<Vec<_>>().join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// Refuses to change the request of a deployment that holds machines:
    /// its cluster was made from the old one.
    pub fn check_request_change(
        &self,
        target: &ClusterDeploymentRef,
        new_spec: &serde_json::Value,
    ) -> Result<(), OrchestratorError> {
        let (spec, record) = self.spec_and_record(target)?;
        let new: ClusterDeploymentSpec =
            wasmco_core::read_spec(new_spec).map_err(OrchestratorError::Field)?;
        if record.machines.is_none() || new.request == spec.request {
            return Ok(());
        }
        Err(OrchestratorError::Conflict(format!(
            "cluster deployment {} holds machines picked for its request; clean it up before \
             changing spec.request",
            target.name
        )))
    }

    pub(super) fn spec_and_record(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<(ClusterDeploymentSpec, RunRecord), OrchestratorError> {
        let id = target.id();
        let body = self.shared.db.get(&id)?;
        let spec = wasmco_core::read_spec(&body["spec"]).map_err(OrchestratorError::Field)?;
        Ok((spec, record::load(&self.shared.db, &id)?))
    }

    /// The provider's machines held by its requested clusters: machine →
    /// deployment.
    fn held(&self, provider: &str) -> Result<BTreeMap<String, String>, OrchestratorError> {
        let db = &self.shared.db;
        let mut held = BTreeMap::new();
        for (id, _) in db.list(Kind::ClusterDeployment, &[provider.to_owned()])? {
            let Some(deployment) = ClusterDeploymentRef::of(&id) else {
                continue;
            };
            if let Some(picked) = record::load(db, &id)?.machines {
                for machine in picked.all() {
                    held.insert(machine.clone(), deployment.name.clone());
                }
            }
        }
        Ok(held)
    }

    fn machines(&self, provider: &str) -> Result<BTreeMap<String, MachineSpec>, OrchestratorError> {
        let listed = self
            .shared
            .db
            .list_specs::<MachineSpec>(Kind::Machine, &[provider.to_owned()])?;
        Ok(listed
            .into_iter()
            .filter_map(|(id, spec)| Some((id.path.last()?.clone(), spec)))
            .collect())
    }

    /// Makes and stores the deploy file of `request` on `picked`, with the
    /// login and infrastructure it names as they are now.
    fn write_request_file(
        &self,
        target: &ClusterDeploymentRef,
        request: &ClusterRequestSpec,
        machines: &BTreeMap<String, MachineSpec>,
        picked: &Picked,
    ) -> Result<(), OrchestratorError> {
        let login = self.login(&target.provider, &request.machine_login_secret.name)?;
        let infrastructure = match &request.infrastructure {
            Some(infrastructure) => {
                Some(self.infrastructure(&target.provider, &infrastructure.name)?)
            }
            None => None,
        };
        let roles = [
            (Role::Master, &picked.masters),
            (Role::Worker, &picked.workers),
        ];
        let chosen: Vec<(&str, &MachineSpec, Role)> = roles
            .into_iter()
            .flat_map(|(role, names)| {
                names
                    .iter()
                    .filter_map(move |name| Some((name.as_str(), machines.get(name)?, role)))
            })
            .collect();
        let password = login.password.as_deref().unwrap_or_default();
        let config = request
            .deploy_config(
                &target.name,
                &chosen,
                (&login.username, password),
                infrastructure,
            )
            .map_err(|e| in_request(e, "machines"))?;
        let upload = DeployUpload {
            deploy_file: String::new(),
            private_key: login.private_key.clone(),
        };
        self.rewrite(target, &upload, &config)
    }

    fn login(&self, provider: &str, name: &str) -> Result<MachineLogin, OrchestratorError> {
        let id = ResourceId::new(
            Kind::MachineLogin,
            vec![provider.to_owned(), name.to_owned()],
        );
        let secret = self.shared.db.file(&id)?.unwrap_or_default();
        MachineLogin::from_secret(&secret).map_err(|e| in_request(e, "machineLoginSecret"))
    }

    fn infrastructure(
        &self,
        provider: &str,
        name: &str,
    ) -> Result<(Install, RolePorts), OrchestratorError> {
        let id = ResourceId::new(
            Kind::Infrastructure,
            vec![provider.to_owned(), name.to_owned()],
        );
        let body = self.shared.db.get(&id)?;
        let spec: wasmco_core::eggo::eggops::InfrastructureSpec =
            wasmco_core::read_spec(&body["spec"]).map_err(OrchestratorError::Field)?;
        let Some(package_dir) = &self.package_dir else {
            return Err(OrchestratorError::Input(
                "this server has no package directory for Eggops' srcPackages".to_owned(),
            ));
        };
        spec.deploy_parts(&package_dir.to_string_lossy())
            .map_err(|e| in_request(e, &format!("infrastructure {name}")))
    }
}

/// The lock every pick of a provider's machines is made under.
fn inventory_key(provider: &str) -> String {
    format!("_machine-inventory/{provider}")
}

/// A problem with what a request names, said with what it is in.
fn in_request(error: FieldError, what: &str) -> OrchestratorError {
    OrchestratorError::Input(format!(
        "the request's {what}: {}: {}",
        error.field, error.reason
    ))
}
