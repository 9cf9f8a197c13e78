//! An AppContext being worked out: what controllers see and change.
//!
//! Each app keeps its manifests once (its base); a cluster whose resources
//! differ keeps only the resources that differ, by key: a changed or added
//! manifest, or a removal. A thousand clusters running the same app hold one
//! copy of its manifests.
//!
//! Controllers' edits are checked first and applied all or none: a batch that
//! fails leaves the draft exactly as it was.

mod actions;
mod patch;
mod placement;

use std::collections::{BTreeMap, HashMap, HashSet};

use wasmco_core::hooks::Hook;
use wasmco_core::resource::{Resource, ResourceKey};
use wasmco_runtime::contract::{
    self, ActionRequest, AppPlacement, AppResources, ClusterResources, Interned, Interner,
    NodeTable, PlacementRequest,
};
use wasmco_store::appcontext::{StoredApp, StoredPlacement};

pub use wasmco_core::{ClusterInfo, NodeInfo};

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
        let mut seen = HashSet::with_capacity(self.placement.len());
        self.placement
            .iter()
            .map(|p| p.cluster)
            .filter(|c| seen.insert(*c))
            .collect()
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

/// The AppContext under construction.
#[derive(Debug, Clone)]
pub struct DraftContext {
    clusters: Vec<ClusterInfo>,
    apps: Vec<AppDraft>,
    app_index: HashMap<String, usize>,
}

impl DraftContext {
    /// A draft of `apps` (in app order) that may use `clusters`.
    pub fn new(apps: Vec<AppDraft>, clusters: Vec<ClusterInfo>) -> Self {
        let app_index = apps
            .iter()
            .enumerate()
            .map(|(i, app)| (app.name.clone(), i))
            .collect();
        DraftContext {
            clusters,
            apps,
            app_index,
        }
    }

    /// The candidate clusters.
    pub fn clusters(&self) -> &[ClusterInfo] {
        &self.clusters
    }

    /// The apps, in app order.
    pub fn apps(&self) -> &[AppDraft] {
        &self.apps
    }

    /// The draft as the context store keeps it: clusters named
    /// `provider+cluster`, and overrides only for the clusters an app is
    /// placed on.
    pub fn into_stored(self) -> Vec<StoredApp> {
        let clusters = self.clusters;
        let key = |index: ClusterIndex| clusters[index as usize].reference();
        self.apps
            .into_iter()
            .map(|app| {
                let placed =
                    |cluster: &ClusterIndex| app.placement.iter().any(|p| p.cluster == *cluster);
                let diffs = app
                    .overrides
                    .into_iter()
                    .filter(|(cluster, _)| placed(cluster))
                    .map(|(cluster, overrides)| {
                        let diff = overrides
                            .into_iter()
                            .map(|(k, o)| match o {
                                Override::Set(r) => (k, Some(r)),
                                Override::Removed => (k, None),
                            })
                            .collect();
                        (key(cluster), diff)
                    })
                    .collect();
                let placement = app
                    .placement
                    .iter()
                    .map(|p| StoredPlacement {
                        cluster: key(p.cluster),
                        group: p.group.clone(),
                    })
                    .collect();
                StoredApp {
                    name: app.name,
                    base: app.base,
                    placement,
                    diffs,
                    hooks: app.hooks,
                }
            })
            .collect()
    }

    fn app_position(&self, name: &str) -> Result<usize, String> {
        self.app_index.get(name).copied().ok_or_else(|| {
            // The name comes from a controller: quoted, it could be any size.
            let shown = wasmco_core::limits::cut(name, 256);
            let more = if shown.len() < name.len() { "…" } else { "" };
            format!("app {shown:?}{more} is not part of this deployment")
        })
    }

    fn describe_cluster(&self, index: ClusterIndex) -> String {
        match self.clusters.get(index as usize) {
            Some(c) => format!("{}/{}", c.provider, c.name),
            None => format!("#{index}"),
        }
    }

    /// What a placement controller gets.
    pub fn placement_request(&self, intent: String) -> PlacementRequest {
        self.placement_request_with_nodes(intent, None)
    }

    /// What a placement controller that asks for the clusters' nodes gets:
    /// `nodes` has a list per cluster of the draft.
    pub fn placement_request_with_nodes(
        &self,
        intent: String,
        nodes: Option<&ClusterNodes>,
    ) -> PlacementRequest {
        let nodes_of = |cluster: usize| {
            nodes
                .and_then(|nodes| nodes.get(cluster))
                .map_or(&[][..], Vec::as_slice)
        };
        let mut interner = Interner::default();
        interner.add_clusters(&self.clusters);
        self.add_app_strings(&mut interner);
        if nodes.is_some() {
            interner.add_nodes((0..self.clusters.len()).map(nodes_of));
        }
        let (strings, ids) = interner.finish();
        let node_table = match nodes {
            Some(_) => ids.node_table((0..self.clusters.len()).map(nodes_of)),
            None => NodeTable::empty(),
        };
        PlacementRequest {
            strings,
            intent,
            apps: self.apps.iter().map(|app| ids.id(&app.name)).collect(),
            clusters: ids.cluster_table(&self.clusters),
            current: self
                .apps
                .iter()
                .filter(|app| !app.placement.is_empty())
                .map(|app| placement_of(app, &ids, |c| c))
                .collect(),
            nodes: node_table,
        }
    }

    /// Notes app names and anyOf group ids.
    fn add_app_strings<'a>(&'a self, interner: &mut Interner<'a>) {
        for app in &self.apps {
            interner.add(&app.name);
            for placed in &app.placement {
                if let Some(group) = &placed.group {
                    interner.add(group);
                }
            }
        }
    }

    /// What an action controller gets. Clusters are renumbered to the ones in
    /// use; the returned map turns the controller's indices back into ours.
    pub fn action_request(&self, intent: String) -> (ActionRequest, Vec<ClusterIndex>) {
        self.action_request_with_nodes(intent, None)
    }

    /// What an action controller that asks for the clusters' nodes gets
    /// (`nodes` as for [`Self::placement_request_with_nodes`]).
    pub fn action_request_with_nodes(
        &self,
        intent: String,
        nodes: Option<&ClusterNodes>,
    ) -> (ActionRequest, Vec<ClusterIndex>) {
        let mut used: Vec<ClusterIndex> = self.apps.iter().flat_map(AppDraft::clusters).collect();
        used.sort_unstable();
        used.dedup();
        let renumber: HashMap<ClusterIndex, u32> = used
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i as u32))
            .collect();
        let used_clusters: Vec<&ClusterInfo> =
            used.iter().map(|&c| &self.clusters[c as usize]).collect();
        let nodes_of = |cluster: &ClusterIndex| {
            nodes
                .and_then(|nodes| nodes.get(*cluster as usize))
                .map_or(&[][..], Vec::as_slice)
        };
        let mut interner = Interner::default();
        interner.add_clusters(used_clusters.iter().copied());
        self.add_app_strings(&mut interner);
        if nodes.is_some() {
            interner.add_nodes(used.iter().map(nodes_of));
        }
        let (strings, ids) = interner.finish();
        let node_table = match nodes {
            Some(_) => ids.node_table(used.iter().map(nodes_of)),
            None => NodeTable::empty(),
        };
        let resources = self
            .apps
            .iter()
            .map(|app| AppResources {
                app: ids.id(&app.name),
                base: app.base.iter().map(to_contract).collect(),
                differing: app
                    .overrides
                    .keys()
                    .filter_map(|cluster| Some((*cluster, *renumber.get(cluster)?)))
                    .map(|(cluster, index)| ClusterResources {
                        cluster: index,
                        resources: app
                            .resources_on(cluster)
                            .into_iter()
                            .map(to_contract)
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        let request = ActionRequest {
            strings,
            intent,
            apps: self.apps.iter().map(|app| ids.id(&app.name)).collect(),
            clusters: ids.cluster_table(used_clusters),
            placements: self
                .apps
                .iter()
                .map(|app| placement_of(app, &ids, |c| renumber[&c]))
                .collect(),
            resources,
            nodes: node_table,
        };
        (request, used)
    }
}

/// An app's placement as a request carries it, with cluster indices mapped by `index`.
fn placement_of(
    app: &AppDraft,
    ids: &Interned<'_>,
    index: impl Fn(ClusterIndex) -> u32,
) -> AppPlacement {
    let groups = if app.placement.iter().all(|p| p.group.is_none()) {
        Vec::new()
    } else {
        app.placement
            .iter()
            .map(|p| p.group.as_deref().map_or(contract::NO_GROUP, |g| ids.id(g)))
            .collect()
    };
    AppPlacement {
        app: ids.id(&app.name),
        clusters: app.placement.iter().map(|p| index(p.cluster)).collect(),
        groups,
    }
}

fn to_contract(resource: &Resource) -> contract::Resource {
    contract::Resource {
        api_version: resource.api_version.clone(),
        kind: resource.key.kind.clone(),
        name: resource.key.name.clone(),
        namespace: resource.namespace.clone(),
        manifest: resource.manifest.to_string(),
    }
}

#[cfg(test)]
mod tests;
