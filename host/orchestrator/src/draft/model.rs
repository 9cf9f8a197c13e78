//! The parts of a draft: its apps, where each is placed, how a cluster's
//! resources differ from the app's, and why an edit was refused.

use std::collections::{BTreeMap, HashMap, HashSet};

use fixedbitset::FixedBitSet;

use wasmco_core::hooks::Hook;
use wasmco_core::resource::{Resource, ResourceKey};

use wasmco_core::NodeInfo;

/// A cluster an app is placed on, and the anyOf group it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedCluster {
    /// Index into the draft's clusters.
    pub cluster: ClusterIndex,
    /// `None` for allOf.
    pub group: Option<String>,
}

/// Index of a cluster in the draft's candidate list.
pub type ClusterIndex = u32;

/// The nodes of each cluster of a draft, by cluster index, for the
/// controllers that ask for them.
pub type ClusterNodes = Vec<Vec<NodeInfo>>;

/// How one cluster's resources differ from the app's base for one key.
#[derive(Debug, Clone, PartialEq)]
pub enum Override {
    /// The cluster has this manifest (changed from the base, or added).
    Set(Resource),
    /// The cluster does not get the base's resource of this key.
    Removed,
}

/// One app of the draft.
#[derive(Debug, Clone)]
pub struct AppDraft {
    /// The app's name.
    pub name: String,
    /// The manifests every cluster gets, in order.
    pub base: Vec<Resource>,
    /// Clusters the app is placed on, with the anyOf group each came from.
    pub placement: Vec<PlacedCluster>,
    /// Per cluster, the resources that differ from `base`, in the order made.
    pub overrides: BTreeMap<ClusterIndex, Vec<(ResourceKey, Override)>>,
    /// A chart's Helm hooks, by weight (controllers do not see them).
    pub hooks: Vec<Hook>,
}

impl AppDraft {
    /// A new app with its rendered manifests, placed nowhere yet.
    pub fn new(name: impl Into<String>, base: Vec<Resource>) -> Self {
        AppDraft {
            name: name.into(),
            base,
            placement: Vec::new(),
            overrides: BTreeMap::new(),
            hooks: Vec::new(),
        }
    }

    /// The clusters the app is placed on, each once, in placement order.
    pub fn clusters(&self) -> Vec<ClusterIndex> {
        let mut seen = FixedBitSet::with_capacity(self.placed_bound());
        self.placement
            .iter()
            .map(|p| p.cluster)
            .filter(|&c| !seen.put(c as usize))
            .collect()
    }

    /// One past the highest cluster index the app is placed on: what a
    /// bit set of its clusters needs.
    pub fn placed_bound(&self) -> usize {
        self.placement
            .iter()
            .map(|p| p.cluster as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The resources `cluster` gets: the base with the cluster's overrides.
    pub fn resources_on(&self, cluster: ClusterIndex) -> Vec<&Resource> {
        let Some(overrides) = self.overrides.get(&cluster) else {
            return self.base.iter().collect();
        };
        let by_key: HashMap<&ResourceKey, &Override> =
            overrides.iter().map(|(k, o)| (k, o)).collect();
        let mut resources: Vec<&Resource> = self
            .base
            .iter()
            .filter_map(|base| match by_key.get(&base.key) {
                None => Some(base),
                Some(Override::Set(changed)) => Some(changed),
                Some(Override::Removed) => None,
            })
            .collect();
        let in_base: HashSet<&ResourceKey> = self.base.iter().map(|b| &b.key).collect();
        resources.extend(overrides.iter().filter_map(|(key, o)| match o {
            Override::Set(added) if !in_base.contains(key) => Some(added),
            _ => None,
        }));
        resources
    }
}

/// An edit the host refused; the whole batch it came in was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("edit {index}: {reason}")]
pub struct EditError {
    /// Position of the edit in the controller's answer.
    pub index: usize,
    /// Why it was refused.
    pub reason: String,
}
