//! Deployments whose deploy file comes from elsewhere than an upload (a
//! GitOps repository): stored, read back and forgotten with the checks an
//! API write makes.

use serde_json::json;

use wasmco_core::Kind;
use wasmco_core::wire::ClusterDeploymentStatus;
use wasmco_store::db::{ResourceId, Write};

use super::run::ClusterDeployments;
use super::target::ClusterDeploymentRef;
use super::upload::DeployUpload;
use crate::error::OrchestratorError;

impl ClusterDeployments {
    /// `target`'s status and stored file; `None` when there is no such
    /// deployment.
    pub fn stored(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<Option<(ClusterDeploymentStatus, DeployUpload)>, OrchestratorError> {
        if !self.shared.db.exists(&target.id())? {
            return Ok(None);
        }
        let (_, upload) = self.inputs(target)?;
        Ok(Some((self.status(target)?, upload)))
    }

    /// Stores `upload` as `target`'s file, making the deployment (and its
    /// provider) when new, as a POST or PUT of it would: refused while a
    /// run goes on, or when the file drops machines of a deployed cluster
    /// that a delete has not taken out.
    pub fn store_file(
        &self,
        target: &ClusterDeploymentRef,
        upload: &DeployUpload,
        description: &str,
    ) -> Result<(), OrchestratorError> {
        let (config, _) = upload.checked().map_err(OrchestratorError::Field)?;
        let db = &self.shared.db;
        let provider = ResourceId::new(Kind::ClusterProvider, vec![target.provider.clone()]);
        if !db.exists(&provider)? {
            let body = json!({"metadata": {"name": target.provider}, "spec": {}});
            let made = db.create(&provider, plain(body, None));
            // Another host may have made it first.
            if !db.exists(&provider)? {
                made?;
            }
        }
        let file = upload.to_bytes();
        let summary = DeployUpload::summary(&config);
        let id = target.id();
        if db.exists(&id)? {
            self.check_idle(target)?;
            let spec: wasmco_core::specs::ClusterDeploymentSpec =
                wasmco_core::read_spec(&db.get(&id)?["spec"]).map_err(OrchestratorError::Field)?;
            if spec.request.is_some() {
                return Err(OrchestratorError::Conflict(format!(
                    "cluster deployment {} is made from a request of the machine inventory, not \
                     a deploy file",
                    target.name
                )));
            }
            self.check_replacement(target, &file)?;
            // Its name, labels and the cluster it registers stay as they are.
            let mut body = db.get(&id)?;
            body["status"] = summary;
            db.update(&id, plain(body, Some(file)))?;
        } else {
            let body = json!({
                "metadata": {"name": target.name, "description": description},
                "spec": {},
                "status": summary,
            });
            db.create(&id, plain(body, Some(file)))?;
        }
        Ok(())
    }

    /// Deletes `target` once no run goes on and it holds no machine of the
    /// inventory; its cluster must have been cleaned up (or never
    /// deployed) for nothing to be left on machines.
    pub fn forget(&self, target: &ClusterDeploymentRef) -> Result<(), OrchestratorError> {
        // No deploy starts (and picks) between the checks and the delete.
        let _action = self.shared.lock(&target.lock_key("action"))?;
        self.check_idle(target)?;
        self.check_holds_no_machine(target)?;
        self.shared.db.delete(&target.id())?;
        Ok(())
    }
}

fn plain(body: serde_json::Value, file: Option<Vec<u8>>) -> Write {
    Write {
        body,
        references: Vec::new(),
        file,
    }
}
