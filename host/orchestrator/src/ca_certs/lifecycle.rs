//! A caCert's two stages through their states: each instantiated,
//! updated, terminated on its own; its status and its release.

use wasmco_core::wire::CertAction;
use wasmco_store::appcontext::{DeployState, DigState};

use super::distribution::Distribution;
use super::enrollment::{Enrollment, forget_enrolled};
use crate::error::OrchestratorError;
use crate::shared::{Shared, allow};
use crate::status::{SyncedContext, synced};
use crate::target::{CaCertRef, CertStage};
use crate::tenancy::Actor;

/// The caCerts, over the shared stores.
pub(crate) struct CaCerts<'a> {
    shared: &'a Shared,
}

impl<'a> CaCerts<'a> {
    /// The caCerts as `shared` holds them.
    pub(crate) fn of(shared: &'a Shared) -> Self {
        CaCerts { shared }
    }

    /// Created or Terminated -> Instantiated. Enrollment signs a
    /// certificate for each cluster the caCert's groups select;
    /// distribution puts each cluster's enrolled CA on it.
    pub(crate) fn instantiate(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.step(cert, stage, actor, CertAction::Instantiate)
    }

    /// Instantiated or Updated -> Updated. Enrollment signs again, for the
    /// clusters the groups select now (EMCO makes every key anew too);
    /// distribution puts what the enrollment signed last.
    pub(crate) fn update(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.step(cert, stage, actor, CertAction::Update)
    }

    fn step(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
        action: CertAction,
    ) -> Result<DigState, OrchestratorError> {
        Self::admin_only(cert, actor)?;
        let (guard, state) = self.shared.begin_at(&cert.key(stage), &cert.id())?;
        let next = allow(&cert.describe(stage), &state, action)?;
        match stage {
            CertStage::Enrollment => Enrollment::of(self.shared).sign(cert, state, next, &guard),
            CertStage::Distribution => {
                Distribution::of(self.shared).distribute(cert, state, next, &guard)
            }
        }
    }

    /// Instantiated or Updated -> Terminated. Distribution: rsync removes
    /// what it put on the clusters. Enrollment: the signed keys are
    /// forgotten, once no distribution still uses them.
    pub(crate) fn terminate(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        Self::admin_only(cert, actor)?;
        let (guard, state) = self.shared.begin_at(&cert.key(stage), &cert.id())?;
        if stage == CertStage::Enrollment {
            let distribution = self
                .shared
                .contexts
                .state(&cert.key(CertStage::Distribution))?
                .state;
            if distribution.is_deployed() {
                return Err(OrchestratorError::Conflict(format!(
                    "{} is {distribution}; terminate it before the enrollment",
                    cert.describe(CertStage::Distribution)
                )));
            }
        }
        let state = self.shared.mark(
            CertAction::Terminate,
            &cert.describe(stage),
            &cert.key(stage),
            state,
            &guard,
        )?;
        if stage == CertStage::Enrollment {
            forget_enrolled(&self.shared.db, cert)?;
        }
        Ok(state)
    }

    /// One stage's state and what rsync did with its context.
    pub(crate) fn status(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.shared.db.get(&cert.id())?;
        synced(&self.shared.contexts, &cert.key(stage))
    }

    /// Refuses to let a caCert with a stage deployed be deleted; forgets
    /// the contexts of one that may be.
    pub(crate) fn release(&self, cert: &CaCertRef) -> Result<(), OrchestratorError> {
        for stage in [CertStage::Distribution, CertStage::Enrollment] {
            let state = self.shared.contexts.state(&cert.key(stage))?.state;
            if state.is_deployed() || state == DeployState::InstantiateStopped {
                return Err(OrchestratorError::Deployed(format!(
                    "{} is {state}; terminate it before deleting the ca cert",
                    cert.describe(stage)
                )));
            }
        }
        for stage in [CertStage::Distribution, CertStage::Enrollment] {
            self.shared.contexts.forget(&cert.key(stage))?;
        }
        Ok(())
    }

    /// Refuses a change of a caCert while a stage is deployed: what was
    /// signed and distributed was made from it (EMCO's rule too).
    pub(crate) fn check_edit(&self, cert: &CaCertRef) -> Result<(), OrchestratorError> {
        for stage in [CertStage::Enrollment, CertStage::Distribution] {
            let state = self.shared.contexts.state(&cert.key(stage))?.state;
            if !matches!(state, DeployState::Created | DeployState::Terminated) {
                return Err(OrchestratorError::Conflict(format!(
                    "{} is {state}: the ca cert cannot change until it is terminated",
                    cert.describe(stage)
                )));
            }
        }
        Ok(())
    }

    /// A caCert gives clusters a CA and changes their mesh's trust, which
    /// is no project's to decide, even on its logical clouds' clusters.
    fn admin_only(cert: &CaCertRef, actor: Actor) -> Result<(), OrchestratorError> {
        match actor {
            Actor::Admin => Ok(()),
            Actor::Tenant => Err(OrchestratorError::Tenancy(format!(
                "{}: a ca cert puts a ClusterIssuer and Istio's mesh signer on its clusters, \
                 cluster-wide; only the admin enrolls and distributes them",
                cert.describe(CertStage::Enrollment)
            ))),
        }
    }
}
