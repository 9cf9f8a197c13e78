//! What a controller is handed: the draft as a placement or an action
//! request, its strings interned once.

use fixedbitset::FixedBitSet;

use wasmco_core::ClusterInfo;
use wasmco_core::resource::Resource;
use wasmco_runtime::contract::{
    self, ActionRequest, AppPlacement, AppResources, ClusterResources, Interned, Interner,
    NodeTable, PlacementRequest,
};

use super::context::DraftContext;
use super::model::{AppDraft, ClusterIndex, ClusterNodes};

impl DraftContext {
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
        interner.add_clusters(self.clusters.iter());
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
            clusters: ids.cluster_table(self.clusters.iter()),
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
        // Cluster indices are dense: a bit per candidate says which are in
        // use and a slot per candidate holds its new number, so 100,000
        // placements hash nothing.
        let mut in_use = FixedBitSet::with_capacity(self.clusters.len());
        for app in &self.apps {
            for placed in &app.placement {
                in_use.insert(placed.cluster as usize);
            }
        }
        let used: Vec<ClusterIndex> = in_use.ones().map(|c| c as ClusterIndex).collect();
        let mut renumber = vec![0u32; self.clusters.len()];
        for (new, &old) in used.iter().enumerate() {
            renumber[old as usize] = new as u32;
        }
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
                    .filter(|&&cluster| in_use.contains(cluster as usize))
                    .map(|&cluster| ClusterResources {
                        cluster: renumber[cluster as usize],
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
                .map(|app| placement_of(app, &ids, |c| renumber[c as usize]))
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
