//! EMCO's network intents (ncm): a cluster's networks and provider
//! networks become ovn4nfv's `Network` and `ProviderNetwork` objects and a
//! `NetworkAttachmentDefinition` each, handed to rsync as a one-app context
//! placed on that cluster, so status, retries and removal come with it.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::network::{NetworkSpec, ProviderNetworkSpec};
use wasmco_core::resource::Resource;
use wasmco_core::wire::NetworkAction;
use wasmco_store::appcontext::{DeployState, DigState};
use wasmco_store::db::ResourceId;

use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::shared::{OnCluster, Shared, allow};
use crate::status::{SyncedContext, synced};
use crate::target::{NETWORK_COMPOSITE_APP, NetworkSetRef};

/// The app of a cluster's network context, as EMCO names it.
const APP: &str = "network-intents";
/// The API group of ovn4nfv's network objects.
const OVN_API_VERSION: &str = "k8s.plugin.opnfv.org/v1alpha1";

/// The clusters' network intents, over the shared stores.
pub(crate) struct Networks<'a> {
    shared: &'a Shared,
}

impl<'a> Networks<'a> {
    /// The network intents as `shared` holds them.
    pub(crate) fn of(shared: &'a Shared) -> Self {
        Networks { shared }
    }

    /// Created, Terminated or TerminateStopped -> Instantiated (EMCO's
    /// Applied); an applied set is applied again as it is now (Updated).
    pub(crate) fn apply(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.shared.begin_at(&set.key(), &set.cluster_id())?;
        let next = allow(&set.describe(), &state, NetworkAction::Apply)?;
        self.build(set, state, next, &guard)
    }

    /// Applied -> Terminated: rsync removes the cluster's network objects.
    pub(crate) fn terminate(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.shared.begin_at(&set.key(), &set.cluster_id())?;
        self.shared.mark(
            NetworkAction::Terminate,
            &set.describe(),
            &set.key(),
            state,
            &guard,
        )
    }

    /// Stops rsync's work on the cluster's networks (see [`crate::Orchestrator::stop`]).
    pub(crate) fn stop(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.shared.begin_at(&set.key(), &set.cluster_id())?;
        self.shared.mark(
            NetworkAction::Stop,
            &set.describe(),
            &set.key(),
            state,
            &guard,
        )
    }

    /// The network set's state and what rsync did with it.
    pub(crate) fn status(
        &self,
        set: &NetworkSetRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.shared.db.get(&set.cluster_id())?;
        synced(&self.shared.contexts, &set.key())
    }

    /// Refuses to let a cluster with applied network intents be deleted;
    /// forgets the network context of one that may be.
    pub(crate) fn release(&self, set: &NetworkSetRef) -> Result<(), OrchestratorError> {
        let state = self.shared.contexts.state(&set.key())?;
        if state.state.is_deployed() || state.state == DeployState::InstantiateStopped {
            return Err(OrchestratorError::Deployed(format!(
                "the {} are {}; terminate them (POST …/clusters/{}/terminate) before deleting \
                 the cluster",
                set.describe(),
                state.state,
                set.cluster
            )));
        }
        Ok(self.shared.contexts.forget(&set.key())?)
    }

    fn build(
        &self,
        set: &NetworkSetRef,
        state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let resources = self.manifests(set)?;
        let on = OnCluster {
            key: &set.key(),
            composite_app: NETWORK_COMPOSITE_APP,
            app: APP,
            provider: &set.provider,
            cluster: &set.cluster,
        };
        self.shared
            .write_on_cluster(&on, resources, state, next, guard)
    }

    /// The objects EMCO's ovn controller writes for the cluster's intents.
    fn manifests(&self, set: &NetworkSetRef) -> Result<Vec<Resource>, OrchestratorError> {
        let parent = set.cluster_id().path;
        let mut manifests = Vec::new();
        let networks: Vec<(ResourceId, NetworkSpec)> =
            self.shared.db.list_specs(Kind::ClusterNetwork, &parent)?;
        for (id, spec) in networks {
            let name = id.path.last().cloned().unwrap_or_default();
            manifests.push(json!({"apiVersion": OVN_API_VERSION, "kind": "Network",
                "metadata": {"name": name, "labels": {"net": name}},
                "spec": serde_json::to_value(&spec).unwrap_or_default()}));
            manifests.push(attachment(&name));
        }
        let provider_networks: Vec<(ResourceId, ProviderNetworkSpec)> = self
            .shared
            .db
            .list_specs(Kind::ClusterProviderNetwork, &parent)?;
        for (id, spec) in provider_networks {
            let name = id.path.last().cloned().unwrap_or_default();
            let mut spec = serde_json::to_value(&spec).unwrap_or_default();
            // The object spells the VLAN id as ovn4nfv's CRD does.
            if let Some(vlan) = spec["vlan"].as_object_mut()
                && let Some(id) = vlan.remove("vlanID")
            {
                vlan.insert("vlanId".into(), id);
            }
            manifests.push(
                json!({"apiVersion": OVN_API_VERSION, "kind": "ProviderNetwork",
                "metadata": {"name": name}, "spec": spec}),
            );
            manifests.push(attachment(&name));
        }
        manifests
            .into_iter()
            .map(|m| {
                Resource::from_manifest(m)
                    .map_err(|e| OrchestratorError::Input(format!("{}: {e}", set.describe())))
            })
            .collect()
    }
}

/// The NetworkAttachmentDefinition through which pods join network `name`.
fn attachment(name: &str) -> Value {
    let config = json!({"cniVersion": "0.3.1", "type": "ovn4nfvk8s-cni", "nfn-network": name});
    json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name}, "spec": {"config": config.to_string()}})
}
