//! An AppContext being worked out: what controllers see and change.
//!
//! Each app keeps its manifests once (its base); a cluster whose resources
//! differ keeps only the resources that differ, by key: a changed or added
//! manifest, or a removal. A thousand clusters running the same app hold one
//! copy of its manifests.
//!
//! Controllers' edits are checked first and applied all or none: a batch that
//! fails leaves the draft exactly as it was.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::resource::{ManifestError, Resource, ResourceKey};
use crate::contract::{
    self, ActionEdit, ActionRequest, AppPlacement, AppResources, ClusterResources, ClusterScope,
    Interned, Interner, PlacementEdit, PlacementRequest,
};

/// A cluster that a deployment may use, as controllers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    /// Its cluster provider.
    pub provider: String,
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// Its key/value pairs, from all its kv-pair documents.
    pub kv: Vec<(String, String)>,
}

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
}

impl AppDraft {
    /// A new app with its rendered manifests, placed nowhere yet.
    pub fn new(name: impl Into<String>, base: Vec<Resource>) -> Self {
        AppDraft {
            name: name.into(),
            base,
            placement: Vec::new(),
            overrides: BTreeMap::new(),
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

    fn is_placed_on(&self, cluster: ClusterIndex) -> bool {
        self.placement.iter().any(|p| p.cluster == cluster)
    }

    /// The resources `cluster` gets: the base with the cluster's overrides.
    pub fn resources_on(&self, cluster: ClusterIndex) -> Vec<&Resource> {
        let Some(overrides) = self.overrides.get(&cluster) else {
            return self.base.iter().collect();
        };
        let lookup = |key: &ResourceKey| overrides.iter().find(|(k, _)| k == key).map(|(_, o)| o);
        let mut resources: Vec<&Resource> = self
            .base
            .iter()
            .filter_map(|base| match lookup(&base.key) {
                None => Some(base),
                Some(Override::Set(changed)) => Some(changed),
                Some(Override::Removed) => None,
            })
            .collect();
        resources.extend(overrides.iter().filter_map(|(key, o)| match o {
            Override::Set(added) if !self.base.iter().any(|b| &b.key == key) => Some(added),
            _ => None,
        }));
        resources
    }

    fn resource_on(&self, cluster: ClusterIndex, key: &ResourceKey) -> Option<&Resource> {
        match self
            .overrides
            .get(&cluster)
            .and_then(|o| o.iter().find(|(k, _)| k == key))
        {
            Some((_, Override::Set(resource))) => Some(resource),
            Some((_, Override::Removed)) => None,
            None => self.base.iter().find(|b| &b.key == key),
        }
    }

    fn set_override(&mut self, cluster: ClusterIndex, key: ResourceKey, value: Override) {
        let list = self.overrides.entry(cluster).or_default();
        match list.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => list.push((key, value)),
        }
    }

    fn clear_override(&mut self, cluster: ClusterIndex, key: &ResourceKey) {
        if let Some(list) = self.overrides.get_mut(&cluster) {
            list.retain(|(k, _)| k != key);
            if list.is_empty() {
                self.overrides.remove(&cluster);
            }
        }
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

    fn app_position(&self, name: &str) -> Result<usize, String> {
        self.app_index
            .get(name)
            .copied()
            .ok_or_else(|| format!("app {name:?} is not part of this deployment"))
    }

    fn describe_cluster(&self, index: ClusterIndex) -> String {
        match self.clusters.get(index as usize) {
            Some(c) => format!("{}/{}", c.provider, c.name),
            None => format!("#{index}"),
        }
    }

    /// What a placement controller gets.
    pub fn placement_request(&self, intent: String) -> PlacementRequest {
        let mut interner = Interner::default();
        interner.add_clusters(&self.clusters);
        self.add_app_strings(&mut interner);
        let (strings, ids) = interner.finish();
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

    /// Checks every placement edit, then applies them all; on error nothing changes.
    pub fn apply_placement(&mut self, edits: &[PlacementEdit]) -> Result<(), EditError> {
        let mut resolved = Vec::with_capacity(edits.len());
        for (index, edit) in edits.iter().enumerate() {
            let fail = |reason: String| EditError { index, reason };
            let (app, clusters) = match edit {
                PlacementEdit::Place(p) => (&p.app, &p.clusters),
                PlacementEdit::Unplace(u) => (&u.app, &u.clusters),
            };
            let position = self.app_position(app).map_err(fail)?;
            if let Some(bad) = clusters
                .iter()
                .find(|&&c| c as usize >= self.clusters.len())
            {
                return Err(fail(format!(
                    "cluster index {bad} is outside the {} candidate clusters",
                    self.clusters.len()
                )));
            }
            if let PlacementEdit::Place(p) = edit {
                if p.group.as_deref().is_some_and(str::is_empty) {
                    return Err(fail("an anyOf group needs a non-empty id".into()));
                }
                if p.clusters.is_empty() {
                    return Err(fail(format!("placing app {app} on no cluster")));
                }
            }
            resolved.push(position);
        }
        for (edit, position) in edits.iter().zip(resolved) {
            let app = &mut self.apps[position];
            match edit {
                PlacementEdit::Place(p) => {
                    let mut present: HashSet<ClusterIndex> = app
                        .placement
                        .iter()
                        .filter(|placed| placed.group == p.group)
                        .map(|placed| placed.cluster)
                        .collect();
                    for &cluster in &p.clusters {
                        if present.insert(cluster) {
                            app.placement.push(PlacedCluster {
                                cluster,
                                group: p.group.clone(),
                            });
                        }
                    }
                }
                PlacementEdit::Unplace(u) => {
                    let gone: HashSet<ClusterIndex> = u.clusters.iter().copied().collect();
                    app.placement.retain(|p| !gone.contains(&p.cluster));
                }
            }
        }
        Ok(())
    }

    /// Ends placement as EMCO does: every allOf cluster stays, and of each
    /// anyOf group only its first cluster (unless the app is already there).
    pub fn settle_placement(&mut self) {
        for app in &mut self.apps {
            let mut settled: Vec<PlacedCluster> = Vec::new();
            let mut taken: HashSet<ClusterIndex> = HashSet::new();
            let mut groups_done: HashSet<&str> = HashSet::new();
            for placed in &app.placement {
                if placed.group.is_none() && taken.insert(placed.cluster) {
                    settled.push(placed.clone());
                }
            }
            for placed in &app.placement {
                let Some(group) = placed.group.as_deref() else {
                    continue;
                };
                if groups_done.insert(group) && taken.insert(placed.cluster) {
                    settled.push(placed.clone());
                }
            }
            app.placement = settled;
        }
    }

    /// What an action controller gets. Clusters are renumbered to the ones in
    /// use; the returned map turns the controller's indices back into ours.
    pub fn action_request(&self, intent: String) -> (ActionRequest, Vec<ClusterIndex>) {
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
        let mut interner = Interner::default();
        interner.add_clusters(used_clusters.iter().copied());
        self.add_app_strings(&mut interner);
        let (strings, ids) = interner.finish();
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
        };
        (request, used)
    }

    /// Applies an action controller's edits in order, all or none. `clusters`
    /// is the map [`Self::action_request`] returned with the request.
    pub fn apply_actions(
        &mut self,
        edits: &[ActionEdit],
        clusters: &[ClusterIndex],
    ) -> Result<(), EditError> {
        let mut scratch = self.apps.clone();
        for (index, edit) in edits.iter().enumerate() {
            self.apply_action(&mut scratch, edit, clusters)
                .map_err(|reason| EditError { index, reason })?;
        }
        self.apps = scratch;
        Ok(())
    }

    fn apply_action(
        &self,
        apps: &mut [AppDraft],
        edit: &ActionEdit,
        request_clusters: &[ClusterIndex],
    ) -> Result<(), String> {
        let (app_name, scope) = match edit {
            ActionEdit::Add(a) => (&a.app, &a.scope),
            ActionEdit::Patch(p) => (&p.app, &p.scope),
            ActionEdit::Remove(r) => (&r.app, &r.scope),
        };
        let app = &mut apps[self.app_position(app_name)?];
        let targets = match scope {
            ClusterScope::All => None,
            ClusterScope::Only(list) => Some(self.scope_clusters(app, list, request_clusters)?),
        };
        match edit {
            ActionEdit::Add(add) => {
                let resource = Resource::from_json(&add.manifest)
                    .map_err(|e| format!("added manifest: {e}"))?;
                add_resource(app, targets, resource)
            }
            ActionEdit::Patch(patch) => {
                let key = ResourceKey {
                    kind: patch.target.kind.clone(),
                    name: patch.target.name.clone(),
                };
                let patch = ParsedPatch::parse(&patch.patch)?;
                patch_resource(app, targets, &key, &patch)
            }
            ActionEdit::Remove(remove) => {
                let key = ResourceKey {
                    kind: remove.target.kind.clone(),
                    name: remove.target.name.clone(),
                };
                remove_resource(app, targets, &key)
            }
        }
    }

    /// Turns a controller's cluster list into our indices, refusing clusters
    /// the app is not placed on.
    fn scope_clusters(
        &self,
        app: &AppDraft,
        list: &[u32],
        request_clusters: &[ClusterIndex],
    ) -> Result<Vec<ClusterIndex>, String> {
        if list.is_empty() {
            return Err("scope lists no cluster; use `all` or name at least one".into());
        }
        list.iter()
            .map(|&i| {
                let cluster = *request_clusters.get(i as usize).ok_or_else(|| {
                    format!(
                        "cluster index {i} is outside the {} clusters of the request",
                        request_clusters.len()
                    )
                })?;
                if !app.is_placed_on(cluster) {
                    return Err(format!(
                        "app {} is not placed on cluster {}",
                        app.name,
                        self.describe_cluster(cluster)
                    ));
                }
                Ok(cluster)
            })
            .collect()
    }
}

/// An app's placement as a request carries it, with cluster indices mapped by `index`.
fn placement_of(
    app: &AppDraft,
    ids: &Interned<'_>,
    index: impl Fn(ClusterIndex) -> u32,
) -> AppPlacement {
    AppPlacement {
        app: ids.id(&app.name),
        clusters: app
            .placement
            .iter()
            .map(|p| contract::PlacedCluster {
                cluster: index(p.cluster),
                group: p.group.as_deref().map(|g| ids.id(g)),
            })
            .collect(),
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

fn add_resource(
    app: &mut AppDraft,
    targets: Option<Vec<ClusterIndex>>,
    resource: Resource,
) -> Result<(), String> {
    let key = resource.key.clone();
    let exists = |app: &AppDraft, cluster| app.resource_on(cluster, &key).is_some();
    match targets {
        None => {
            if app.base.iter().any(|b| b.key == key)
                || app.overrides.values().flatten().any(|(k, _)| *k == key)
            {
                return Err(format!("app {} already has resource {key}", app.name));
            }
            app.base.push(resource);
        }
        Some(clusters) => {
            for cluster in clusters {
                if exists(app, cluster) {
                    return Err(format!(
                        "app {} already has resource {key} on cluster #{cluster}",
                        app.name
                    ));
                }
                app.set_override(cluster, key.clone(), Override::Set(resource.clone()));
            }
        }
    }
    Ok(())
}

fn patch_resource(
    app: &mut AppDraft,
    targets: Option<Vec<ClusterIndex>>,
    key: &ResourceKey,
    patch: &ParsedPatch,
) -> Result<(), String> {
    match targets {
        None => {
            // The base and every cluster's own version of the resource get the
            // patch once, so a later patch wins on every cluster.
            let mut found = false;
            if let Some(base) = app.base.iter_mut().find(|b| &b.key == key) {
                *base = patch.apply(base, key)?;
                found = true;
            }
            for list in app.overrides.values_mut() {
                for (k, o) in list.iter_mut() {
                    if let (true, Override::Set(resource)) = (k == key, &mut *o) {
                        *resource = patch.apply(resource, key)?;
                        found = true;
                    }
                }
            }
            if !found {
                return Err(format!("app {} has no resource {key} to patch", app.name));
            }
        }
        Some(clusters) => {
            for cluster in clusters {
                let current = app.resource_on(cluster, key).ok_or_else(|| {
                    format!(
                        "app {} has no resource {key} on cluster #{cluster}",
                        app.name
                    )
                })?;
                let patched = patch.apply(current, key)?;
                app.set_override(cluster, key.clone(), Override::Set(patched));
            }
        }
    }
    Ok(())
}

fn remove_resource(
    app: &mut AppDraft,
    targets: Option<Vec<ClusterIndex>>,
    key: &ResourceKey,
) -> Result<(), String> {
    match targets {
        None => {
            let before = app.base.len();
            app.base.retain(|b| &b.key != key);
            let mut found = app.base.len() != before;
            for list in app.overrides.values_mut() {
                let len = list.len();
                list.retain(|(k, _)| k != key);
                found |= list.len() != len;
            }
            app.overrides.retain(|_, list| !list.is_empty());
            if !found {
                return Err(format!("app {} has no resource {key} to remove", app.name));
            }
        }
        Some(clusters) => {
            for cluster in clusters {
                if app.resource_on(cluster, key).is_none() {
                    return Err(format!(
                        "app {} has no resource {key} on cluster #{cluster} to remove",
                        app.name
                    ));
                }
                if app.base.iter().any(|b| &b.key == key) {
                    app.set_override(cluster, key.clone(), Override::Removed);
                } else {
                    app.clear_override(cluster, key);
                }
            }
        }
    }
    Ok(())
}

/// A controller's patch, parsed once for all the clusters it applies to.
enum ParsedPatch {
    Json(json_patch::Patch),
    Merge(Value),
}

impl ParsedPatch {
    fn parse(patch: &contract::Patch) -> Result<Self, String> {
        match patch {
            contract::Patch::JsonPatch(text) => serde_json::from_str(text)
                .map(ParsedPatch::Json)
                .map_err(|e| format!("json-patch is not an RFC 6902 patch: {e}")),
            contract::Patch::MergePatch(text) => match serde_json::from_str(text) {
                Ok(value @ Value::Object(_)) => Ok(ParsedPatch::Merge(value)),
                Ok(_) => Err("merge-patch must be a JSON object".into()),
                Err(e) => Err(format!("merge-patch is not JSON: {e}")),
            },
        }
    }

    /// The patched copy of `resource`, which must still be `key`.
    fn apply(&self, resource: &Resource, key: &ResourceKey) -> Result<Resource, String> {
        let mut manifest = resource.manifest.clone();
        match self {
            ParsedPatch::Json(patch) => json_patch::patch(&mut manifest, patch)
                .map_err(|e| format!("json-patch on {key} failed: {e}"))?,
            ParsedPatch::Merge(patch) => json_patch::merge(&mut manifest, patch),
        }
        let patched = Resource::from_manifest(manifest)
            .map_err(|e: ManifestError| format!("patched {key} is no longer valid: {e}"))?;
        if patched.key != *key {
            return Err(format!(
                "a patch may not change kind or metadata.name ({key} became {})",
                patched.key
            ));
        }
        Ok(patched)
    }
}

#[cfg(test)]
mod tests;
