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
use wasmco_core::wire::{ClusterDeploymentState, ClusterDeploymentStatus};
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
                        // New machines: no progress, no host key pinned, of
                        // whatever its earlier machines were.
                        record.progress = Default::default();
                        if let Err(error) =
                            self.write_request_file(target, request, &machines, &picked)
                        {
                            record.progress.waiting = None;
                            return Err(error);
                        }
                        tracing::info!(deployment = %target.name, ?picked, "machines picked");
                        record.machines = Some(picked);
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

    /// A cleanup of a requested cluster that holds no machine (waiting for
    /// them, or stopped before any was picked): nothing is on a machine,
    /// so the run, if any, is withdrawn and nothing else is done. `None`
    /// when the deployment holds machines or is not a request.
    pub fn withdrawn(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<Option<ClusterDeploymentStatus>, OrchestratorError> {
        // Under both: no deploy starts, nor any pick is made, meanwhile.
        let _action = self.shared.lock(&target.lock_key("action"))?;
        let _inventory = self.shared.lock(&inventory_key(&target.provider))?;
        let (spec, mut record) = self.spec_and_record(target)?;
        if spec.request.is_none() || record.machines.is_some() {
            return Ok(None);
        }
        if matches!(
            record.state,
            ClusterDeploymentState::Deploying | ClusterDeploymentState::Failed
        ) {
            record.state = ClusterDeploymentState::CleanedUp;
            record.progress.waiting = None;
            record.ended = Some(wasmco_store::appcontext::now());
            record::save(&self.shared.db, &target.id(), &record)?;
        } else if record.state.is_running() {
            return Ok(None);
        }
        Ok(Some(self.answer(target, &spec, record)?))
    }

    /// Stores machine `name` of `provider` (`body` is its whole body), or
    /// with `None` deletes it: refused while a requested cluster holds it
    /// and the change would move it (its address, port, name or
    /// architecture), or when another machine of the provider is reached
    /// at the same address and port.
    pub fn write_machine(
        &self,
        provider: &str,
        name: &str,
        change: MachineChange,
    ) -> Result<(), OrchestratorError> {
        let _inventory = self.shared.lock(&inventory_key(provider))?;
        let id = ResourceId::new(Kind::Machine, vec![provider.to_owned(), name.to_owned()]);
        let held_by = self.held(provider)?.remove(name);
        let (write, creating) = match change {
            MachineChange::Create(write) => (Some(write), true),
            MachineChange::Update(write) => (Some(write), false),
            MachineChange::Delete => (None, false),
        };
        let Some(write) = write else {
            if let Some(deployment) = held_by {
                return Err(OrchestratorError::Conflict(format!(
                    "machine {name} is in the cluster of cluster deployment {deployment}; clean \
                     that up (or delete the deployment) first"
                )));
            }
            self.shared.db.delete(&id)?;
            return Ok(());
        };
        let spec: MachineSpec =
            wasmco_core::read_spec(&write.body["spec"]).map_err(OrchestratorError::Field)?;
        let machines = self.machines(provider)?;
        if let (Some(deployment), Some(now)) = (&held_by, machines.get(name))
            && now.host(name) != spec.host(name)
        {
            return Err(OrchestratorError::Conflict(format!(
                "machine {name} is in the cluster of cluster deployment {deployment}; its \
                 address, port, hostname and arch stay as they are until that is cleaned up"
            )));
        }
        let host = spec.host(name);
        if let Some((other, _)) = machines.iter().find(|(other, machine)| {
            *other != name
                && machine.host(other).ip == host.ip
                && machine.host(other).port == host.port
        }) {
            return Err(OrchestratorError::Field(FieldError::new(
                "spec.ip",
                format!(
                    "machine {other} is reached at {}:{} already",
                    host.ip, host.port
                ),
            )));
        }
        if creating {
            self.shared.db.create(&id, write)?;
        } else {
            self.shared.db.update(&id, write)?;
        }
        Ok(())
    }

    /// Refuses to forget a requested cluster that holds machines: they
    /// would be handed out again while its cluster runs on them.
    pub(super) fn check_holds_no_machine(
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
        if new.request.is_some() != spec.request.is_some() {
            // A file's cluster is not the inventory's, nor the other way.
            return Err(OrchestratorError::Conflict(format!(
                "cluster deployment {} is made from {}; delete it and create another to make it \
                 from {}",
                target.name,
                if spec.request.is_some() {
                    "a request"
                } else {
                    "a deploy file"
                },
                if spec.request.is_some() {
                    "a deploy file"
                } else {
                    "a request"
                },
            )));
        }
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
        let mut config = request
            .deploy_config(
                &target.name,
                &chosen,
                (&login.username, password),
                infrastructure,
            )
            .map_err(|e| in_request(e, "machines"))?;
        if login.private_key.is_some() {
            // Where Eggo would read the key from (an absolute path, by its
            // checks); wasmco's comes sealed with the file, and this only
            // says which login it is.
            config.private_key_path = format!(
                "/wasmco/machine-logins/{}",
                request.machine_login_secret.name
            );
        }
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

/// What a write does to a machine.
pub enum MachineChange {
    /// `POST`.
    Create(wasmco_store::db::Write),
    /// `PUT`.
    Update(wasmco_store::db::Write),
    /// `DELETE`.
    Delete,
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
