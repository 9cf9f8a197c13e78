//! One step of one file: the action that carries its deployment toward
//! the commit read, started once per commit, or its removal.

use wasmco_core::eggo::DeployConfig;
use wasmco_core::wire::{
    ClusterDeploymentState, ClusterDeploymentStatus, GitOpsAction, GitOpsError, GitOpsFile,
};

use super::follower::GitOps;
use super::plan::{Current, Step, next_step};
use crate::cluster_deploy::{ClusterDeploymentRef, ClusterDeployments, DeployUpload};
use crate::error::OrchestratorError;

impl GitOps {
    fn target(&self, name: &str) -> ClusterDeploymentRef {
        ClusterDeploymentRef {
            provider: self.options.provider.clone(),
            name: name.to_owned(),
        }
    }

    /// Starts the next action toward `config` (the file at `commit`) for
    /// `file`'s deployment, unless one runs or this commit's already did.
    pub(super) fn step(
        &self,
        commit: &str,
        file: &mut GitOpsFile,
        upload: &DeployUpload,
        config: &DeployConfig,
    ) {
        let deployments = self.orchestrator.cluster_deployments();
        let name = file.cluster_deployment.clone().unwrap_or_default();
        let target = self.target(&name);
        let current = match deployments.stored(&target).and_then(|stored| {
            stored
                .map(|(status, stored)| current(&status, &stored).map(|c| (c, status)))
                .transpose()
        }) {
            Ok(current) => current,
            Err(error) => return file.error = Some(problem(commit, error)),
        };
        let step = next_step(current.as_ref().map(|(c, _)| c), config);
        file.state = current.as_ref().map(|(c, _)| c.state);
        if step == Step::Reached {
            file.reached = Some(commit.to_owned());
            return;
        }
        let Some(action) = step.action() else {
            return;
        };
        let this = GitOpsAction {
            action: action.to_owned(),
            commit: commit.to_owned(),
        };
        if file.started.as_ref() == Some(&this) {
            // Tried for this commit already: a failed action waits for the
            // next commit rather than running again every poll.
            if let Some((_, status)) =
                current.filter(|(c, _)| c.state == ClusterDeploymentState::Failed)
            {
                file.error = Some(GitOpsError {
                    commit: commit.to_owned(),
                    field: None,
                    reason: format!(
                        "the {action} failed: {}",
                        status
                            .progress
                            .error
                            .unwrap_or_else(|| "no reason kept".to_owned())
                    ),
                });
            }
            return;
        }
        let description = format!("from {} in {}", file.path, self.options.repo.shown());
        match start(&deployments, &target, &step, upload, &description) {
            Ok(state) => {
                file.started = Some(this);
                file.state = Some(state);
            }
            Err(error) => file.error = Some(problem(commit, error)),
        }
    }

    /// Takes a removed file's cluster down, then forgets its deployment;
    /// whether the file is still to be shown (not yet gone).
    pub(super) fn remove(&self, commit: &str, file: &mut GitOpsFile) -> bool {
        let Some(name) = file.cluster_deployment.clone() else {
            return false;
        };
        let target = self.target(&name);
        let deployments = self.orchestrator.cluster_deployments();
        let status = match deployments.stored(&target) {
            Ok(Some((status, _))) => status,
            Ok(None) => return false,
            Err(error) => {
                file.error = Some(problem(commit, error));
                return true;
            }
        };
        file.state = Some(status.state);
        use ClusterDeploymentState::*;
        let outcome = match status.state {
            state if state.is_running() => return true,
            Created | CleanedUp => match deployments.forget(&target) {
                Ok(()) => return false,
                Err(error) => Err(error),
            },
            _ => {
                let this = GitOpsAction {
                    action: "cleanup".to_owned(),
                    commit: commit.to_owned(),
                };
                let failed_here = status.state == ClusterDeploymentState::Failed
                    && status.run == Some(ClusterDeploymentState::CleaningUp);
                if file.started.as_ref() == Some(&this) && failed_here {
                    Err(OrchestratorError::Conflict(format!(
                        "the cleanup failed: {}",
                        status.progress.error.unwrap_or_default()
                    )))
                } else {
                    // Started only once the cleanup is: one refused (apps
                    // still on the cluster) is asked again every poll.
                    self.orchestrator
                        .cleanup_cluster_deployment(&target, false)
                        .map(|status| {
                            file.started = Some(this);
                            file.state = Some(status.state);
                        })
                }
            }
        };
        if let Err(error) = outcome {
            file.error = Some(problem(commit, error));
        }
        true
    }
}

/// Where the deployment is, with its stored file read.
fn current(
    status: &ClusterDeploymentStatus,
    stored: &DeployUpload,
) -> Result<Current, OrchestratorError> {
    let config = wasmco_core::eggo::parse(&stored.deploy_file).map_err(OrchestratorError::Field)?;
    Ok(Current {
        state: status.state,
        run: status.run,
        scope: status.scope.clone(),
        config,
    })
}

/// Stores the file where the step needs it, then starts the step's action;
/// the state it leads to.
fn start(
    deployments: &ClusterDeployments,
    target: &ClusterDeploymentRef,
    step: &Step,
    upload: &DeployUpload,
    description: &str,
) -> Result<ClusterDeploymentState, OrchestratorError> {
    let status = match step {
        Step::Create | Step::Deploy { replace: true } => {
            deployments.store_file(target, upload, description)?;
            deployments.deploy(target)?
        }
        Step::Deploy { replace: false } => deployments.deploy(target)?,
        Step::Delete(nodes) => deployments.delete_nodes(target, nodes)?,
        Step::Join(join) => deployments.join(target, join)?,
        Step::Upgrade => {
            deployments.store_file(target, upload, description)?;
            deployments.upgrade(target)?
        }
        Step::Wait | Step::Reached => deployments.status(target)?,
    };
    Ok(status.state)
}

/// An error as the status shows it: by field when it is one.
fn problem(commit: &str, error: OrchestratorError) -> GitOpsError {
    let (field, reason) = match error {
        OrchestratorError::Field(problem) => (Some(problem.field), problem.reason),
        other => (None, other.to_string()),
    };
    GitOpsError {
        commit: commit.to_owned(),
        field,
        reason,
    }
}
