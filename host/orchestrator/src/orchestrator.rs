//! The orchestrator as the API and the binary see it: one value, cheap to
//! clone, whose methods each hand the action to the concern that owns it
//! (DIGs, logical clouds, network sets, caCerts, service discovery), all
//! working over the stores they share (`crate::shared::Shared`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};

use wasmco_core::{ClusterRef, Kind};
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_runtime::Controller;
use wasmco_runtime::helm::HelmRenderer;
use wasmco_store::appcontext::{
    ClusterHealth, ContextStore, DigState, ReconcileListener, StoredContext, SyncEngine,
};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};
use wasmco_store::hosts::HostGroup;

use crate::ca_certs::CaCerts;
use crate::cluster_deploy::{ClusterDeploymentRef, ClusterDeployments};
use crate::dig::{Build, Digs, Sources};
use crate::error::OrchestratorError;
use crate::intents::{Catalog, IntentCatalog};
use crate::locks::{DeclarationLock, TargetLocks};
use crate::logical_cloud::LogicalClouds;
use crate::metrics::OrchestratorMetrics;
use crate::network::Networks;
use crate::registry::ControllerRegistry;
use crate::service_discovery::Mirrors;
use crate::shared::Shared;
use crate::status::{SyncedContext, TalliedContext};
use crate::target::{CaCertRef, CertStage, Deployed, DigRef, LogicalCloudRef, NetworkSetRef};
use crate::tenancy::Actor;

/// DIG, logical cloud, network and caCert actions over the resource
/// database and the context store.
#[derive(Clone)]
pub struct Orchestrator {
    pub(crate) shared: Shared,
    pub(crate) registry: ControllerRegistry,
    generic: Arc<Controller>,
    /// Renders the apps that are Helm charts.
    helm: HelmRenderer,
    /// What a cluster's kubeconfig may ask of this host.
    kubeconfigs: Arc<KubeconfigPolicy>,
    /// How long each stage of an instantiate or update takes.
    metrics: OrchestratorMetrics,
    /// The intent kinds the stored controllers declare.
    intents: Arc<IntentCatalog>,
    /// This host's id, when hosts share the store.
    pub(crate) host: Option<String>,
    /// The cluster deployments this process has a run thread for.
    deploy_runs: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    package_dir: Option<std::path::PathBuf>,
}

impl Orchestrator {
    /// An orchestrator calling `generic` for generic placement intents.
    pub fn new(
        db: ResourceDb,
        contexts: ContextStore,
        registry: ControllerRegistry,
        generic: Arc<Controller>,
        helm: HelmRenderer,
        sync: Arc<dyn SyncEngine>,
        kubeconfigs: Arc<KubeconfigPolicy>,
    ) -> Self {
        Orchestrator {
            shared: Shared {
                db,
                contexts,
                sync,
                actions: Arc::default(),
            },
            registry,
            generic,
            helm,
            kubeconfigs,
            metrics: OrchestratorMetrics::default(),
            intents: Arc::default(),
            host: None,
            deploy_runs: Arc::default(),
            package_dir: None,
        }
    }

    /// Where Eggops' `Infrastructure` finds the package archives its
    /// `srcPackages` name by relative path.
    pub fn with_package_dir(mut self, package_dir: std::path::PathBuf) -> Self {
        self.package_dir = Some(package_dir);
        self
    }

    /// Serialises each target's actions across `hosts` too, not only
    /// within this process.
    pub fn with_hosts(mut self, hosts: Arc<dyn HostGroup>) -> Self {
        self.host = Some(hosts.me().id.clone());
        self.shared.actions = Arc::new(TargetLocks::across(hosts));
        self
    }

    /// The clusters wasmco makes on machines (Eggo's deploy).
    pub fn cluster_deployments(&self) -> ClusterDeployments {
        ClusterDeployments {
            shared: self.shared.clone(),
            policy: self.kubeconfigs.clone(),
            host: self.host.clone(),
            settings: wasmco_clusters::DeploySettings::default(),
            package_dir: self.package_dir.clone(),
            threads: self.deploy_runs.clone(),
        }
    }

    /// `cleanup` of a cluster deployment; with `force`, what is deployed
    /// on its cluster (DIGs, then the logical clouds they run in, then
    /// network intents) is terminated first, each through its own
    /// lifecycle, instead of refusing.
    pub fn cleanup_cluster_deployment(
        &self,
        target: &ClusterDeploymentRef,
        force: bool,
    ) -> Result<wasmco_core::wire::ClusterDeploymentStatus, OrchestratorError> {
        let deployments = self.cluster_deployments();
        if force {
            // A request holding no machine has nothing on a cluster to
            // force off: its cleanup withdraws it.
            if let Some(status) = deployments.withdrawn(target)? {
                return Ok(status);
            }
            let mut deployed = Vec::new();
            for key in deployments.deployed_on_cluster_of(target)? {
                let kind = Deployed::of(&key).ok_or_else(|| {
                    OrchestratorError::Deployed(format!(
                        "{key} is deployed on the cluster and a forced cleanup cannot terminate \
                         it; terminate it, then clean up"
                    ))
                })?;
                deployed.push(kind);
            }
            deployed.sort_by_key(Deployed::order);
            for kind in deployed {
                match kind {
                    Deployed::Dig(dig) => self.terminate(&dig)?,
                    Deployed::Cloud(cloud) => self.terminate_logical_cloud(&cloud)?,
                    Deployed::Networks(set) => self.terminate_networks(&set)?,
                };
            }
        }
        deployments.cleanup(target, force)
    }

    pub(crate) fn digs(&self) -> Digs<'_> {
        Digs::new(Build {
            shared: &self.shared,
            sources: Sources {
                registry: &self.registry,
                generic: &self.generic,
                helm: &self.helm,
                intents: &self.intents,
            },
            metrics: &self.metrics,
        })
    }

    fn clouds(&self) -> LogicalClouds<'_> {
        LogicalClouds::of(&self.shared, &self.kubeconfigs)
    }

    fn networks(&self) -> Networks<'_> {
        Networks::of(&self.shared)
    }

    fn ca_certs(&self) -> CaCerts<'_> {
        CaCerts::of(&self.shared)
    }

    /// Tells `listener` of every reconcile the sync engine finishes.
    pub(crate) fn listen(&self, listener: Weak<dyn ReconcileListener>) {
        self.shared.sync.listen(listener);
    }

    /// The lock a controller's upload holds from checking its declared
    /// kinds against the stored controllers' until it is stored: two
    /// uploads at once, on this host or another, would otherwise both pass
    /// the check with other kinds at one segment.
    pub fn lock_declarations(&self) -> Result<DeclarationLock, OrchestratorError> {
        // `_` starts no project's name, so no DIG's or cloud's key.
        let guard = self.shared.lock("_controllers/declarations")?;
        Ok(DeclarationLock { _guard: guard })
    }

    /// The intent kinds the stored controllers declare, as stored now.
    pub fn intent_catalog(&self) -> Result<Arc<Catalog>, DbError> {
        self.intents.current(&self.shared.db)
    }

    /// How long instantiates and updates take, for `/metrics`.
    pub fn metrics(&self) -> &OrchestratorMetrics {
        &self.metrics
    }

    /// Each target being synced and the id of the host syncing it.
    pub fn sync_work(&self) -> BTreeMap<String, String> {
        self.shared.sync.work()
    }

    /// The Helm renderer apps that are charts are rendered with.
    pub fn helm(&self) -> &HelmRenderer {
        &self.helm
    }

    /// The DIG's state and history.
    pub fn state(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.digs().state(dig)
    }

    /// Created -> Approved.
    pub fn approve(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.digs().approve(dig)
    }

    /// Approved, Terminated or TerminateStopped -> Instantiated, with a new
    /// context; `actor`'s tenancy rules checked on it.
    pub fn instantiate(&self, dig: &DigRef, actor: Actor) -> Result<DigState, OrchestratorError> {
        self.digs().instantiate(dig, actor)
    }

    /// Instantiated or Updated -> Updated, with a new context from the current inputs.
    pub fn update(&self, dig: &DigRef, actor: Actor) -> Result<DigState, OrchestratorError> {
        self.digs().update(dig, actor)
    }

    /// EMCO's migrate: the deployed DIG's objects move to `target_dig` of
    /// version `target_version` of the same composite app (Approved), as
    /// one update; the source is Terminated.
    pub fn migrate(
        &self,
        source: &DigRef,
        target_version: &str,
        target_dig: &str,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.digs()
            .migrate(source, target_version, target_dig, actor)
    }

    /// Instantiated or Updated -> Updated, back to a kept revision, which
    /// `actor`'s tenancy rules must allow as they are now.
    pub fn rollback(
        &self,
        dig: &DigRef,
        revision: u64,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.digs().rollback(dig, revision, actor)
    }

    /// Tells rsync to stop working on the DIG, as EMCO's `stop` does:
    /// Instantiated or Updated -> InstantiateStopped, Terminated ->
    /// TerminateStopped.
    pub fn stop(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.digs().stop(dig)
    }

    /// Instantiated, Updated or InstantiateStopped -> Terminated; the
    /// context is marked for removal.
    pub fn terminate(&self, dig: &DigRef) -> Result<DigState, OrchestratorError> {
        self.digs().terminate(dig)
    }

    /// The current context (or revision `revision`).
    pub fn context(
        &self,
        dig: &DigRef,
        revision: Option<u64>,
    ) -> Result<(DigState, StoredContext), OrchestratorError> {
        self.digs().context(dig, revision)
    }

    /// The DIG's state and, when it has a context, the context with what
    /// rsync recorded for it: resource statuses and cluster connectivity.
    pub fn status(
        &self,
        dig: &DigRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.digs().status(dig)
    }

    /// The DIG's state and its context's cells as rsync tallied them:
    /// what the status page shows. `unreachable` are the clusters the
    /// probes find unreachable now (see [`Self::unreachable`]), read once
    /// for many DIGs.
    pub fn tallied(
        &self,
        dig: &DigRef,
        unreachable: &BTreeSet<ClusterRef>,
    ) -> Result<(DigState, Option<TalliedContext>), OrchestratorError> {
        self.digs().tallied(dig, unreachable)
    }

    /// The clusters rsync's probes find unreachable now.
    pub fn unreachable(&self) -> Result<BTreeSet<ClusterRef>, OrchestratorError> {
        crate::status::unreachable(&self.shared.contexts)
    }

    /// Forgets a deleted DIG's contexts and state.
    pub fn forget(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        self.digs().forget(dig)
    }

    /// Makes the DIG's services known to their clients as its context
    /// now asks (see [`crate::service_discovery`]).
    pub fn mirror_services(&self, dig: &DigRef) -> Result<(), OrchestratorError> {
        Mirrors::of(&self.shared).mirror_services(dig)
    }

    /// A cluster's kubeconfig changed (or the cluster was deleted); the
    /// next sync reads the stored one again.
    pub fn cluster_changed(&self, provider: &str, cluster: &str) {
        self.shared
            .sync
            .cluster_changed(&ClusterRef::new(provider, cluster));
    }

    /// Every cluster's health as rsync's probes last recorded it.
    pub fn cluster_healths(&self) -> Result<Vec<(ClusterRef, ClusterHealth)>, OrchestratorError> {
        Ok(self.shared.contexts.healths()?)
    }

    /// What rsync's probe last saw of a cluster; `None` before its first probe.
    pub fn cluster_health(
        &self,
        provider: &str,
        cluster: &str,
    ) -> Result<Option<ClusterHealth>, OrchestratorError> {
        self.shared.db.get(&ResourceId::new(
            Kind::Cluster,
            vec![provider.to_owned(), cluster.to_owned()],
        ))?;
        Ok(self
            .shared
            .contexts
            .health(&ClusterRef::new(provider, cluster))?)
    }

    /// Created or Terminated -> Instantiated: the cloud's user gets a
    /// certificate on every referenced cluster, and its namespace, roles
    /// and quota go to rsync.
    pub fn instantiate_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.clouds().instantiate(lc, actor)
    }

    /// Instantiated or Updated -> Updated: the cloud as its references,
    /// permissions and quotas are now.
    pub fn update_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.clouds().update(lc, actor)
    }

    /// Tells rsync to stop working on the cloud (see [`Self::stop`]).
    pub fn stop_logical_cloud(&self, lc: &LogicalCloudRef) -> Result<DigState, OrchestratorError> {
        self.clouds().stop(lc)
    }

    /// Instantiated -> Terminated: rsync removes what the logical cloud made.
    /// Refused while a DIG deployed in it relies on its namespace and user.
    pub fn terminate_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<DigState, OrchestratorError> {
        self.clouds().terminate(lc)
    }

    /// Refuses a change of a deployed cloud's level, namespace or user: its
    /// DIGs and their checks rely on them until it is terminated.
    pub fn check_cloud_edit(
        &self,
        lc: &LogicalCloudRef,
        edited: &wasmco_core::specs::LogicalCloudSpec,
    ) -> Result<(), OrchestratorError> {
        self.clouds().check_edit(lc, edited)
    }

    /// The logical cloud's state and what rsync did with its context.
    pub fn logical_cloud_status(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.clouds().status(lc)
    }

    /// Refuses to let a deployed logical cloud be deleted; forgets the
    /// context of one that may be.
    pub fn release_logical_cloud(&self, lc: &LogicalCloudRef) -> Result<(), OrchestratorError> {
        self.clouds().release(lc)
    }

    /// Created, Terminated or TerminateStopped -> Instantiated (EMCO's
    /// Applied); an applied set is applied again as it is now (Updated).
    pub fn apply_networks(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        self.networks().apply(set)
    }

    /// Applied -> Terminated: rsync removes the cluster's network objects.
    pub fn terminate_networks(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        self.networks().terminate(set)
    }

    /// Stops rsync's work on the cluster's networks (see [`Self::stop`]).
    pub fn stop_networks(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        self.networks().stop(set)
    }

    /// The network set's state and what rsync did with it.
    pub fn networks_status(
        &self,
        set: &NetworkSetRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.networks().status(set)
    }

    /// Refuses to let a cluster with applied network intents be deleted;
    /// forgets the network context of one that may be.
    pub fn release_networks(&self, set: &NetworkSetRef) -> Result<(), OrchestratorError> {
        self.networks().release(set)
    }

    /// Created or Terminated -> Instantiated. Enrollment signs a
    /// certificate for each cluster the caCert's groups select;
    /// distribution puts each cluster's enrolled CA on it.
    pub fn instantiate_ca_cert(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.ca_certs().instantiate(cert, stage, actor)
    }

    /// Instantiated or Updated -> Updated. Enrollment signs again, for the
    /// clusters the groups select now; distribution puts what the
    /// enrollment signed last.
    pub fn update_ca_cert(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.ca_certs().update(cert, stage, actor)
    }

    /// Instantiated or Updated -> Terminated. Distribution: rsync removes
    /// what it put on the clusters. Enrollment: the signed keys are
    /// forgotten, once no distribution still uses them.
    pub fn terminate_ca_cert(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.ca_certs().terminate(cert, stage, actor)
    }

    /// One stage's state and what rsync did with its context.
    pub fn ca_cert_status(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.ca_certs().status(cert, stage)
    }

    /// Refuses to let a caCert with a stage deployed be deleted; forgets
    /// the contexts of one that may be.
    pub fn release_ca_cert(&self, cert: &CaCertRef) -> Result<(), OrchestratorError> {
        self.ca_certs().release(cert)
    }

    /// Refuses a change of a caCert while a stage is deployed: what was
    /// signed and distributed was made from it (EMCO's rule too).
    pub fn check_ca_cert_edit(&self, cert: &CaCertRef) -> Result<(), OrchestratorError> {
        self.ca_certs().check_edit(cert)
    }
}
