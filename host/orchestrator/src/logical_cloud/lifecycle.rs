//! A logical cloud through its states: instantiated and updated (its
//! context built anew), stopped, terminated once no DIG relies on it; its
//! status, the edits it allows while deployed, and its release.

use std::sync::Arc;

use wasmco_core::Kind;
use wasmco_core::specs::LogicalCloudSpec;
use wasmco_core::wire::CloudAction;
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::appcontext::{DeployState, DigState};

use super::build::CloudBuild;
use crate::error::OrchestratorError;
use crate::shared::{Shared, allow};
use crate::status::{SyncedContext, synced};
use crate::target::{DigRef, LogicalCloudRef};
use crate::tenancy::{Actor, Tenancy};

/// The logical clouds, over the shared stores.
pub(crate) struct LogicalClouds<'a> {
    shared: &'a Shared,
    /// What a cluster's kubeconfig may ask of this host.
    kubeconfigs: &'a Arc<KubeconfigPolicy>,
}

impl<'a> LogicalClouds<'a> {
    /// The logical clouds as `shared` holds them; the clusters'
    /// kubeconfigs read under `kubeconfigs`.
    pub(crate) fn of(shared: &'a Shared, kubeconfigs: &'a Arc<KubeconfigPolicy>) -> Self {
        LogicalClouds {
            shared,
            kubeconfigs,
        }
    }

    /// Created or Terminated -> Instantiated: gets the user a certificate
    /// on every referenced cluster and hands the namespace, roles and
    /// quota to rsync.
    ///
    /// A cluster with a CA in the store gets the certificate from it now.
    /// Any other signs it itself, as EMCO has it: the context carries the
    /// user's CertificateSigningRequest there, rsync approves it and keeps
    /// the certificate the cluster issues as the user's kubeconfig.
    pub(crate) fn instantiate(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.build(lc, actor, CloudAction::Instantiate)
    }

    /// Instantiated or Updated -> Updated: the cloud as its references,
    /// permissions and quotas are now (a cluster added or dropped, say).
    pub(crate) fn update(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.build(lc, actor, CloudAction::Update)
    }

    fn build(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
        action: CloudAction,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.shared.begin_at(&lc.key(), &lc.id())?;
        let next = allow(&lc.describe(), &state, action)?;
        let build = CloudBuild {
            shared: self.shared,
            kubeconfigs: self.kubeconfigs,
            lc,
            actor,
        };
        build.run(state, next, &guard)
    }

    /// Tells rsync to stop working on the cloud (see
    /// [`crate::Orchestrator::stop`]).
    pub(crate) fn stop(&self, lc: &LogicalCloudRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.shared.begin_at(&lc.key(), &lc.id())?;
        self.shared
            .mark(CloudAction::Stop, &lc.describe(), &lc.key(), state, &guard)
    }

    /// Instantiated -> Terminated: rsync removes what the logical cloud made.
    /// Refused while a DIG deployed in it relies on its namespace and user.
    pub(crate) fn terminate(&self, lc: &LogicalCloudRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.shared.begin_at(&lc.key(), &lc.id())?;
        let users = self.digs_in(lc)?;
        if !users.is_empty() {
            return Err(OrchestratorError::Conflict(format!(
                "{} is used by deployment intent group {}; terminate {} first",
                lc.describe(),
                users.join(", "),
                if users.len() == 1 { "it" } else { "them" }
            )));
        }
        self.shared.mark(
            CloudAction::Terminate,
            &lc.describe(),
            &lc.key(),
            state,
            &guard,
        )
    }

    /// The project's DIGs deployed (or stopped while deployed) in `lc`.
    fn digs_in(&self, lc: &LogicalCloudRef) -> Result<Vec<String>, OrchestratorError> {
        let mut users = Vec::new();
        let digs = self.shared.db.list_under(
            Kind::DeploymentIntentGroup,
            std::slice::from_ref(&lc.project),
        )?;
        for (id, body) in digs {
            if body["spec"]["logicalCloud"].as_str() != Some(lc.name.as_str()) {
                continue;
            }
            let dig = DigRef::from_path(&id.path);
            let state = self.shared.contexts.state(&dig.key())?.state;
            if state.is_deployed() || state == DeployState::InstantiateStopped {
                users.push(dig.key());
            }
        }
        Ok(users)
    }

    /// Refuses a change of a deployed cloud's level, namespace or user: its
    /// DIGs and their checks rely on them until it is terminated.
    pub(crate) fn check_edit(
        &self,
        lc: &LogicalCloudRef,
        edited: &LogicalCloudSpec,
    ) -> Result<(), OrchestratorError> {
        let state = self.shared.contexts.state(&lc.key())?.state;
        if matches!(state, DeployState::Created | DeployState::Terminated) {
            return Ok(());
        }
        let stored: LogicalCloudSpec = self.shared.db.spec(&lc.id())?;
        let changed = [
            (stored.is_admin() != edited.is_admin(), "spec.level"),
            (stored.namespace != edited.namespace, "spec.namespace"),
            (
                stored.user_name() != edited.user_name(),
                "spec.user.userName",
            ),
        ];
        match changed.iter().find(|(changed, _)| *changed) {
            None => Ok(()),
            Some((_, field)) => Err(OrchestratorError::Conflict(format!(
                "{} is {state}: its {field} cannot change until it is terminated",
                lc.describe()
            ))),
        }
    }

    /// The logical cloud's state and what rsync did with its context.
    pub(crate) fn status(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.shared.db.get(&lc.id())?;
        synced(&self.shared.contexts, &lc.key())
    }

    /// Refuses to let a deployed logical cloud be deleted; forgets the
    /// context of one that may be.
    pub(crate) fn release(&self, lc: &LogicalCloudRef) -> Result<(), OrchestratorError> {
        let state = self.shared.contexts.state(&lc.key())?;
        if state.state.is_deployed() {
            return Err(OrchestratorError::Deployed(format!(
                "{} is {}; terminate it before deleting it",
                lc.describe(),
                state.state
            )));
        }
        self.shared.contexts.forget(&lc.key())?;
        Tenancy::of(self.shared).let_go_namespaces(&lc.project, &lc.name)
    }
}
