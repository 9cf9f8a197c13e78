//! What a controller is handed: the draft as a placement or an action
//! request, its strings interned once.

use std::collections::HashMap;

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
