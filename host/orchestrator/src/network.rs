//! EMCO's network intents (ncm): a cluster's networks and provider
//! networks become ovn4nfv's `Network` and `ProviderNetwork` objects and a
//! `NetworkAttachmentDefinition` each, handed to rsync as a one-app context
//! placed on that cluster, so status, retries and removal come with it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::network::{NetworkSpec, ProviderNetworkSpec};
use wasmco_core::resource::Resource;
use wasmco_core::wire::NetworkAction;
use wasmco_runtime::contract::{PlaceApp, PlacementEdit};
use wasmco_store::appcontext::{self as stored, Access, ContextMeta, DeployState, DigState};
use wasmco_store::db::ResourceId;

use super::deploy::{Orchestrator, SyncedContext};
use super::dig::OrchestratorError;
use super::locks::TargetGuard;
use crate::draft::{AppDraft, ClusterInfo, DraftContext};

/// The app of a cluster's network context, as EMCO names it.
const APP: &str = "network-intents";
/// The composite app of network contexts: `_` starts no real one's name.
const CONTEXT_COMPOSITE_APP: &str = "_network-intents";
/// The API group of ovn4nfv's network objects.
const OVN_API_VERSION: &str = "k8s.plugin.opnfv.org/v1alpha1";

/// The network intents of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSetRef {
    /// The cluster's provider.
    pub provider: String,
    /// The cluster.
    pub cluster: String,
}

impl NetworkSetRef {
    fn cluster_id(&self) -> ResourceId {
        ResourceId::new(
            Kind::Cluster,
            vec![self.provider.clone(), self.cluster.clone()],
        )
    }

    /// Its key in the context store; no DIG's or logical cloud's.
    pub fn key(&self) -> String {
        format!("{}/{CONTEXT_COMPOSITE_APP}/{}", self.provider, self.cluster)
    }

    fn describe(&self) -> String {
        format!(
            "network intents of cluster {}/{}",
            self.provider, self.cluster
        )
    }
}

impl Orchestrator {
    /// Created, Terminated or TerminateStopped -> Instantiated (EMCO's
    /// Applied); an applied set is applied again as it is now (Updated).
    pub fn apply_networks(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&set.key(), &set.cluster_id())?;
        let next = Self::allow(&set.describe(), &state, NetworkAction::Apply)?;
        self.build_networks(set, state, next, &guard)
    }

    /// Applied -> Terminated: rsync removes the cluster's network objects.
    pub fn terminate_networks(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&set.key(), &set.cluster_id())?;
        self.mark(
            NetworkAction::Terminate,
            &set.describe(),
            &set.key(),
            state,
            &guard,
        )
    }

    /// Stops rsync's work on the cluster's networks (see [`Self::stop`]).
    pub fn stop_networks(&self, set: &NetworkSetRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&set.key(), &set.cluster_id())?;
        self.mark(
            NetworkAction::Stop,
            &set.describe(),
            &set.key(),
            state,
            &guard,
        )
    }

    /// The network set's state and what rsync did with it.
    pub fn networks_status(
        &self,
        set: &NetworkSetRef,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.db.get(&set.cluster_id())?;
        self.synced(&set.key())
    }

    /// Refuses to let a cluster with applied network intents be deleted;
    /// forgets the network context of one that may be.
    pub fn release_networks(&self, set: &NetworkSetRef) -> Result<(), OrchestratorError> {
        let state = self.contexts.state(&set.key())?;
        if state.state.is_deployed() || state.state == DeployState::InstantiateStopped {
            return Err(OrchestratorError::Deployed(format!(
                "the {} are {}; terminate them (POST …/clusters/{}/terminate) before deleting \
                 the cluster",
                set.describe(),
                state.state,
                set.cluster
            )));
        }
        Ok(self.contexts.forget(&set.key())?)
    }

    fn build_networks(
        &self,
        set: &NetworkSetRef,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let resources = self.network_manifests(set)?;
        let cluster = ClusterInfo {
            provider: set.provider.clone(),
            name: set.cluster.clone(),
            labels: Vec::new(),
            kv: Vec::new(),
        };
        let mut draft = DraftContext::new(vec![AppDraft::new(APP, resources)], vec![cluster]);
        let here = PlacementEdit::Place(PlaceApp {
            app: APP.to_owned(),
            clusters: vec![0],
            group: None,
        });
        draft
            .apply_placement(&[here])
            .map_err(|e| OrchestratorError::Input(e.reason))?;
        draft.settle_placement();
        let revision = state.latest + 1;
        let meta = ContextMeta {
            project: set.provider.clone(),
            composite_app: CONTEXT_COMPOSITE_APP.into(),
            composite_app_version: String::new(),
            deployment_intent_group: set.cluster.clone(),
            release: String::new(),
            revision,
            created: stored::now(),
            app_order: vec![APP.to_owned()],
            dependencies: BTreeMap::new(),
            access: Access::default(),
            adopt_from: None,
            confinement: None,
            service_mirrors: Vec::new(),
        };
        state.enter(next, revision);
        self.contexts.write(
            &set.key(),
            &meta,
            &draft.into_stored(),
            &state,
            guard.fence(),
        )?;
        self.sync.changed(&set.key());
        Ok(state)
    }

    /// The objects EMCO's ovn controller writes for the cluster's intents.
    fn network_manifests(&self, set: &NetworkSetRef) -> Result<Vec<Resource>, OrchestratorError> {
        let parent = set.cluster_id().path;
        let mut manifests = Vec::new();
        let networks: Vec<(ResourceId, NetworkSpec)> =
            self.db.list_specs(Kind::ClusterNetwork, &parent)?;
        for (id, spec) in networks {
            let name = id.path.last().cloned().unwrap_or_default();
            manifests.push(json!({"apiVersion": OVN_API_VERSION, "kind": "Network",
                "metadata": {"name": name, "labels": {"net": name}},
                "spec": serde_json::to_value(&spec).unwrap_or_default()}));
            manifests.push(attachment(&name));
        }
        let provider_networks: Vec<(ResourceId, ProviderNetworkSpec)> =
            self.db.list_specs(Kind::ClusterProviderNetwork, &parent)?;
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
