//! The `cleanup` action (Eggo's cleanup) and its run: refused while
//! anything of wasmco's is deployed on the cluster but its addons; the
//! machines given back (see `wasmco_clusters::cleanup`); the addons
//! forgotten and the cluster unregistered, with its labels and PKI.

use wasmco_core::ClusterRef;
use wasmco_core::wire::Deployed;
use wasmco_core::wire::{ClusterDeploymentAction, ClusterDeploymentStatus};
use wasmco_store::db::{DbError, ResourceId};

use super::addons::ClusterAddons;
use super::record::RunRecord;
use super::run::ClusterDeployments;
use super::target::ClusterDeploymentRef;
use crate::error::OrchestratorError;

impl ClusterDeployments {
    /// `cleanup`: checked and recorded as `CleaningUp`, then run on a
    /// thread of its own; answers at once with the status. `forced` is
    /// whether what was deployed on the cluster was terminated for it: the
    /// run then waits until rsync has taken it off before it touches a
    /// machine.
    pub fn cleanup(
        &self,
        target: &ClusterDeploymentRef,
        forced: bool,
    ) -> Result<ClusterDeploymentStatus, OrchestratorError> {
        if let Some(status) = self.withdrawn(target)? {
            return Ok(status);
        }
        self.start(
            target,
            ClusterDeploymentAction::Cleanup,
            |spec, record, _| {
                let cluster = ClusterRef::new(&target.provider, spec.cluster_name(&target.name));
                let deployed = self.deployed_on(&cluster)?;
                if deployed.is_empty() {
                    record.force = forced;
                    return Ok(Vec::new());
                }
                Err(OrchestratorError::Deployed(format!(
                    "cluster {} still runs what wasmco deployed there ({}); terminate it before \
                 cleaning the cluster up, or clean up with force to have it terminated first",
                    cluster.cluster,
                    deployed.join(", ")
                )))
            },
        )
    }

    /// The contexts deployed on `target`'s cluster (DIGs, logical clouds,
    /// network sets), by key: what a forced cleanup terminates. Refused,
    /// terminating nothing, when a cleanup could not start now.
    pub fn deployed_on_cluster_of(
        &self,
        target: &ClusterDeploymentRef,
    ) -> Result<Vec<String>, OrchestratorError> {
        let _action = self.shared.lock(&target.lock_key("action"))?;
        let (spec, ..) = self.admitted(target, ClusterDeploymentAction::Cleanup)?;
        self.deployed_on(&ClusterRef::new(
            &target.provider,
            spec.cluster_name(&target.name),
        ))
    }

    /// Waits until rsync has taken off `cluster` every object of the
    /// contexts that were placed there (terminated for a forced cleanup).
    fn wait_taken_off(&self, cluster: &ClusterRef) -> Result<(), OrchestratorError> {
        let deadline = std::time::Instant::now() + self.settings.ready_timeout;
        loop {
            let mut left = Vec::new();
            for (key, state) in self.shared.contexts.states()? {
                if state.revision == 0 || key == self.addons_key(cluster) {
                    continue;
                }
                let (_, synced) = crate::status::synced(&self.shared.contexts, &key)?;
                let Some(synced) = synced else { continue };
                let remaining = synced.statuses.iter().any(|((_, on, _), status)| {
                    on == cluster
                        && !matches!(status.deployed, Deployed::Deleted | Deployed::Released)
                });
                if remaining {
                    left.push(key);
                }
            }
            if left.is_empty() {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                return Err(OrchestratorError::Deployed(format!(
                    "what was deployed on cluster {} was not all taken off in time ({}); the \
                     cleanup touched no machine",
                    cluster.cluster,
                    left.join(", ")
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }

    fn addons_key(&self, cluster: &ClusterRef) -> String {
        ClusterAddons {
            shared: &self.shared,
            provider: &cluster.provider,
            cluster: &cluster.cluster,
        }
        .key()
    }

    /// The cleanup itself: the machines first, then the cluster forgotten,
    /// so a cleanup that fails on a machine leaves the cluster registered
    /// and reachable for another try.
    pub(super) fn clean_once(
        &self,
        target: &ClusterDeploymentRef,
        record: &mut RunRecord,
    ) -> Result<(), OrchestratorError> {
        let db = &self.shared.db;
        let id = target.id();
        let (spec, deployment) = self.prepared(target)?;
        let cluster = ClusterRef::new(&target.provider, spec.cluster_name(&target.name));
        if record.force {
            self.wait_taken_off(&cluster)?;
        }
        let (deployment, settings, from) = (&deployment, &self.settings, record.progress.clone());
        let outcome = self.on_machines(&id, record, move |report| {
            wasmco_clusters::cleanup(deployment, settings, from, report)
        })?;
        record.progress = outcome?;
        self.forget_addons(&cluster)?;
        // Only a cluster this deployment registered is its to remove.
        if record.registered {
            let cluster_id = ResourceId::new(
                wasmco_core::Kind::Cluster,
                vec![cluster.provider.clone(), cluster.cluster.clone()],
            );
            match db.delete(&cluster_id) {
                Ok(()) | Err(DbError::NotFound(_)) => {}
                Err(other) => return Err(other.into()),
            }
            self.shared.sync.cluster_changed(&cluster);
        }
        Ok(())
    }

    /// Stops rsync's work on `cluster`'s addons and forgets them: the
    /// cluster is leaving the fleet (its resource is being deleted).
    pub fn forget_addons(&self, cluster: &ClusterRef) -> Result<(), OrchestratorError> {
        ClusterAddons {
            shared: &self.shared,
            provider: &cluster.provider,
            cluster: &cluster.cluster,
        }
        .forget()
    }

    /// What is deployed on `cluster` (DIGs, logical clouds, network sets;
    /// not the cluster's own addons), by description.
    fn deployed_on(&self, cluster: &ClusterRef) -> Result<Vec<String>, OrchestratorError> {
        let own = self.addons_key(cluster);
        let contexts = &self.shared.contexts;
        let mut deployed = Vec::new();
        for (key, state) in contexts.states()? {
            if key == own || !state.state.is_deployed() || state.revision == 0 {
                continue;
            }
            let context = contexts.read(&key, state.revision)?;
            let placed_here = context.apps.iter().any(|app| {
                app.placement
                    .iter()
                    .any(|placed| &placed.cluster == cluster)
            });
            if placed_here {
                deployed.push(key);
            }
        }
        Ok(deployed)
    }
}
