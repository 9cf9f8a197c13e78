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

use crate::budget::{Budget, EditLimits};
use wasmco_core::resource::{ManifestError, Resource, ResourceKey};
use wasmco_runtime::contract::{
    self, ActionEdit, ActionRequest, AppPlacement, AppResources, ClusterResources, ClusterScope,
    Interned, Interner, PlacementEdit, PlacementRequest,
};
use wasmco_store::appcontext::{StoredApp, StoredPlacement};

pub use wasmco_core::ClusterInfo;

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

    /// [`Self::apply_placement_within`] the default limits.
    pub fn apply_placement(&mut self, edits: &[PlacementEdit]) -> Result<(), EditError> {
        self.apply_placement_within(edits, EditLimits::default())
    }

    /// Checks every placement edit, then applies them all; on error nothing
    /// changes. Work is linear in the edits and the clusters they list.
    pub fn apply_placement_within(
        &mut self,
        edits: &[PlacementEdit],
        limits: EditLimits,
    ) -> Result<(), EditError> {
        Budget::new(limits)
            .check_count(edits.len())
            .map_err(|reason| EditError {
                index: limits.max_edits,
                reason,
            })?;
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
        let mut indices: HashMap<usize, PlacementIndex> = HashMap::new();
        for (edit, position) in edits.iter().zip(resolved) {
            let app = &mut self.apps[position];
            let index = indices
                .entry(position)
                .or_insert_with(|| PlacementIndex::of(app));
            match edit {
                PlacementEdit::Place(p) => {
                    for &cluster in &p.clusters {
                        index.place(app, cluster, &p.group);
                    }
                }
                PlacementEdit::Unplace(u) => {
                    for cluster in &u.clusters {
                        index.unplace(app, *cluster);
                    }
                }
            }
        }
        for (position, index) in indices {
            index.compact(&mut self.apps[position]);
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

    /// [`Self::apply_actions_within`] the default limits.
    pub fn apply_actions(
        &mut self,
        edits: &[ActionEdit],
        clusters: &[ClusterIndex],
    ) -> Result<(), EditError> {
        self.apply_actions_within(edits, clusters, EditLimits::default())
    }

    /// Applies an action controller's edits in order, all or none. `clusters`
    /// is the map [`Self::action_request`] returned with the request. The
    /// edits' work is bounded by `limits` and linear in their number.
    pub fn apply_actions_within(
        &mut self,
        edits: &[ActionEdit],
        clusters: &[ClusterIndex],
        limits: EditLimits,
    ) -> Result<(), EditError> {
        let mut budget = Budget::new(limits);
        budget
            .check_count(edits.len())
            .map_err(|reason| EditError {
                index: limits.max_edits,
                reason,
            })?;
        let mut scratch = self.apps.clone();
        let mut indices: HashMap<usize, AppIndex> = HashMap::new();
        for (index, edit) in edits.iter().enumerate() {
            self.apply_action(&mut scratch, &mut indices, &mut budget, edit, clusters)
                .map_err(|reason| EditError {
                    index,
                    reason: wasmco_core::limits::bounded(reason),
                })?;
        }
        self.apps = scratch;
        Ok(())
    }

    fn apply_action(
        &self,
        apps: &mut [AppDraft],
        indices: &mut HashMap<usize, AppIndex>,
        budget: &mut Budget,
        edit: &ActionEdit,
        request_clusters: &[ClusterIndex],
    ) -> Result<(), String> {
        let (app_name, scope) = match edit {
            ActionEdit::Add(a) => (&a.app, &a.scope),
            ActionEdit::Patch(p) => (&p.app, &p.scope),
            ActionEdit::Remove(r) => (&r.app, &r.scope),
        };
        let position = self.app_position(app_name)?;
        let app = &mut apps[position];
        let index = indices.entry(position).or_insert_with(|| AppIndex::of(app));
        let targets = match scope {
            ClusterScope::All => None,
            ClusterScope::Only(list) => {
                Some(self.scope_clusters(app, index, list, request_clusters)?)
            }
        };
        let mut edit_app = AppEdit { app, index };
        match edit {
            ActionEdit::Add(add) => {
                let resource = Resource::from_json(&add.manifest)
                    .map_err(|e| format!("added manifest: {e}"))?;
                let copies = targets.as_ref().map_or(1, Vec::len);
                budget.spend(&resource.manifest, copies)?;
                edit_app.add(targets, resource)
            }
            ActionEdit::Patch(patch) => {
                let key = ResourceKey {
                    kind: patch.target.kind.clone(),
                    name: patch.target.name.clone(),
                };
                let patch = ParsedPatch::parse(&patch.patch)?;
                edit_app.patch(targets, &key, &patch, budget)
            }
            ActionEdit::Remove(remove) => {
                let key = ResourceKey {
                    kind: remove.target.kind.clone(),
                    name: remove.target.name.clone(),
                };
                edit_app.remove(targets, &key)
            }
        }
    }

    /// Turns a controller's cluster list into our indices, each once,
    /// refusing clusters the app is not placed on.
    fn scope_clusters(
        &self,
        app: &AppDraft,
        index: &AppIndex,
        list: &[u32],
        request_clusters: &[ClusterIndex],
    ) -> Result<Vec<ClusterIndex>, String> {
        if list.is_empty() {
            return Err("scope lists no cluster; use `all` or name at least one".into());
        }
        let mut seen = HashSet::with_capacity(list.len().min(request_clusters.len()));
        let mut clusters = Vec::new();
        for &i in list {
            let cluster = *request_clusters.get(i as usize).ok_or_else(|| {
                format!(
                    "cluster index {i} is outside the {} clusters of the request",
                    request_clusters.len()
                )
            })?;
            if !index.placed.contains(&cluster) {
                return Err(format!(
                    "app {} is not placed on cluster {}",
                    app.name,
                    self.describe_cluster(cluster)
                ));
            }
            // A cluster listed twice is patched once, not once per mention.
            if seen.insert(cluster) {
                clusters.push(cluster);
            }
        }
        Ok(clusters)
    }
}

/// Where an app's placed clusters are, kept while placement edits apply so
/// each edit costs what it lists, not what the app already has. Unplaced
/// entries are marked and dropped once at the end.
struct PlacementIndex {
    /// The live clusters of each group (`None`: allOf).
    present: HashMap<Option<String>, HashSet<ClusterIndex>>,
    /// Positions in `placement` of each cluster's live entries.
    positions: HashMap<ClusterIndex, Vec<usize>>,
    /// Positions unplaced during this batch.
    dropped: HashSet<usize>,
}

impl PlacementIndex {
    fn of(app: &AppDraft) -> Self {
        let mut index = PlacementIndex {
            present: HashMap::new(),
            positions: HashMap::new(),
            dropped: HashSet::new(),
        };
        for (position, placed) in app.placement.iter().enumerate() {
            index
                .present
                .entry(placed.group.clone())
                .or_default()
                .insert(placed.cluster);
            index
                .positions
                .entry(placed.cluster)
                .or_default()
                .push(position);
        }
        index
    }

    fn place(&mut self, app: &mut AppDraft, cluster: ClusterIndex, group: &Option<String>) {
        let fresh = self
            .present
            .entry(group.clone())
            .or_default()
            .insert(cluster);
        if fresh {
            self.positions
                .entry(cluster)
                .or_default()
                .push(app.placement.len());
            app.placement.push(PlacedCluster {
                cluster,
                group: group.clone(),
            });
        }
    }

    fn unplace(&mut self, app: &AppDraft, cluster: ClusterIndex) {
        for position in self.positions.remove(&cluster).unwrap_or_default() {
            if let Some(set) = self.present.get_mut(&app.placement[position].group) {
                set.remove(&cluster);
            }
            self.dropped.insert(position);
        }
    }

    fn compact(self, app: &mut AppDraft) {
        if self.dropped.is_empty() {
            return;
        }
        let mut position = 0;
        app.placement.retain(|_| {
            let keep = !self.dropped.contains(&position);
            position += 1;
            keep
        });
    }
}

/// Lookups into an app's resources, kept while one call's action edits
/// apply, so that checking an edit does not rescan what earlier edits made.
struct AppIndex {
    /// The clusters the app is placed on.
    placed: HashSet<ClusterIndex>,
    /// Position of each base resource.
    base: HashMap<ResourceKey, usize>,
    /// The clusters with an override of each key.
    overridden: HashMap<ResourceKey, HashSet<ClusterIndex>>,
    /// Per cluster, the position of each key in its override list.
    per_cluster: HashMap<ClusterIndex, HashMap<ResourceKey, usize>>,
}

impl AppIndex {
    fn of(app: &AppDraft) -> Self {
        let mut index = AppIndex {
            placed: app.placement.iter().map(|p| p.cluster).collect(),
            base: HashMap::new(),
            overridden: HashMap::new(),
            per_cluster: HashMap::new(),
        };
        index.reindex(app);
        index
    }

    /// Rebuilds the resource lookups (after removals shifted positions).
    fn reindex(&mut self, app: &AppDraft) {
        self.base = app
            .base
            .iter()
            .enumerate()
            .map(|(i, r)| (r.key.clone(), i))
            .collect();
        self.overridden.clear();
        self.per_cluster.clear();
        for (cluster, list) in &app.overrides {
            let positions = self.per_cluster.entry(*cluster).or_default();
            for (i, (key, _)) in list.iter().enumerate() {
                positions.insert(key.clone(), i);
                self.overridden
                    .entry(key.clone())
                    .or_default()
                    .insert(*cluster);
            }
        }
    }
}

/// An app and its lookups, changed together.
struct AppEdit<'a> {
    app: &'a mut AppDraft,
    index: &'a mut AppIndex,
}

impl AppEdit<'_> {
    fn resource_on(&self, cluster: ClusterIndex, key: &ResourceKey) -> Option<&Resource> {
        let overridden = self
            .index
            .per_cluster
            .get(&cluster)
            .and_then(|positions| positions.get(key))
            .and_then(|&i| self.app.overrides.get(&cluster)?.get(i));
        match overridden {
            Some((_, Override::Set(resource))) => Some(resource),
            Some((_, Override::Removed)) => None,
            None => self.index.base.get(key).map(|&i| &self.app.base[i]),
        }
    }

    fn set_override(&mut self, cluster: ClusterIndex, key: ResourceKey, value: Override) {
        let list = self.app.overrides.entry(cluster).or_default();
        let positions = self.index.per_cluster.entry(cluster).or_default();
        match positions.get(&key) {
            Some(&i) => list[i].1 = value,
            None => {
                positions.insert(key.clone(), list.len());
                self.index
                    .overridden
                    .entry(key.clone())
                    .or_default()
                    .insert(cluster);
                list.push((key, value));
            }
        }
    }

    fn clear_override(&mut self, cluster: ClusterIndex, key: &ResourceKey) {
        if let Some(list) = self.app.overrides.get_mut(&cluster) {
            list.retain(|(k, _)| k != key);
            if list.is_empty() {
                self.app.overrides.remove(&cluster);
            }
        }
        // Positions after the removed entry moved; rebuild this cluster's.
        let positions: HashMap<ResourceKey, usize> = self
            .app
            .overrides
            .get(&cluster)
            .map(|list| {
                list.iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect()
            })
            .unwrap_or_default();
        self.index.per_cluster.insert(cluster, positions);
        if let Some(clusters) = self.index.overridden.get_mut(key) {
            clusters.remove(&cluster);
        }
    }

    fn add(
        &mut self,
        targets: Option<Vec<ClusterIndex>>,
        resource: Resource,
    ) -> Result<(), String> {
        let key = resource.key.clone();
        match targets {
            None => {
                let overridden = self
                    .index
                    .overridden
                    .get(&key)
                    .is_some_and(|clusters| !clusters.is_empty());
                if self.index.base.contains_key(&key) || overridden {
                    return Err(format!("app {} already has resource {key}", self.app.name));
                }
                self.index.base.insert(key, self.app.base.len());
                self.app.base.push(resource);
            }
            Some(clusters) => {
                for cluster in clusters {
                    if self.resource_on(cluster, &key).is_some() {
                        return Err(format!(
                            "app {} already has resource {key} on cluster #{cluster}",
                            self.app.name
                        ));
                    }
                    self.set_override(cluster, key.clone(), Override::Set(resource.clone()));
                }
            }
        }
        Ok(())
    }

    fn patch(
        &mut self,
        targets: Option<Vec<ClusterIndex>>,
        key: &ResourceKey,
        patch: &ParsedPatch,
        budget: &mut Budget,
    ) -> Result<(), String> {
        match targets {
            None => {
                // The base and every cluster's own version of the resource get the
                // patch once, so a later patch wins on every cluster.
                let mut found = false;
                if let Some(&i) = self.index.base.get(key) {
                    let patched = patch.apply(&self.app.base[i], key, budget)?;
                    self.app.base[i] = patched;
                    found = true;
                }
                let clusters: Vec<ClusterIndex> = self
                    .index
                    .overridden
                    .get(key)
                    .map(|c| c.iter().copied().collect())
                    .unwrap_or_default();
                for cluster in clusters {
                    let Some(&i) = self
                        .index
                        .per_cluster
                        .get(&cluster)
                        .and_then(|p| p.get(key))
                    else {
                        continue;
                    };
                    if let Some((_, Override::Set(resource))) = self
                        .app
                        .overrides
                        .get_mut(&cluster)
                        .and_then(|list| list.get_mut(i))
                    {
                        *resource = patch.apply(resource, key, budget)?;
                        found = true;
                    }
                }
                if !found {
                    return Err(format!(
                        "app {} has no resource {key} to patch",
                        self.app.name
                    ));
                }
            }
            Some(clusters) => {
                for cluster in clusters {
                    let current = self.resource_on(cluster, key).ok_or_else(|| {
                        format!(
                            "app {} has no resource {key} on cluster #{cluster}",
                            self.app.name
                        )
                    })?;
                    let patched = patch.apply(current, key, budget)?;
                    self.set_override(cluster, key.clone(), Override::Set(patched));
                }
            }
        }
        Ok(())
    }

    fn remove(
        &mut self,
        targets: Option<Vec<ClusterIndex>>,
        key: &ResourceKey,
    ) -> Result<(), String> {
        match targets {
            None => {
                let app = &mut *self.app;
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
                self.index.reindex(app);
            }
            Some(clusters) => {
                for cluster in clusters {
                    if self.resource_on(cluster, key).is_none() {
                        return Err(format!(
                            "app {} has no resource {key} on cluster #{cluster} to remove",
                            self.app.name
                        ));
                    }
                    if self.index.base.contains_key(key) {
                        self.set_override(cluster, key.clone(), Override::Removed);
                    } else {
                        self.clear_override(cluster, key);
                    }
                }
            }
        }
        Ok(())
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

    /// The patched copy of `resource`, which must still be `key`. JSON
    /// patch operations apply one at a time, the budget checked after each;
    /// a `copy` or `move` into its own subtree is refused (repeated, it
    /// doubles the manifest each time).
    fn apply(
        &self,
        resource: &Resource,
        key: &ResourceKey,
        budget: &mut Budget,
    ) -> Result<Resource, String> {
        let mut manifest = resource.manifest.clone();
        match self {
            ParsedPatch::Json(patch) => {
                for (position, operation) in patch.0.iter().enumerate() {
                    if let Some((from, path)) = into_own_subtree(operation) {
                        return Err(format!(
                            "json-patch on {key}: operation {position} copies {from} into its own subtree ({path})"
                        ));
                    }
                    // On the copy: an error discards it, so the unchecked
                    // variant (no undo log) is enough.
                    json_patch::patch_unsafe(&mut manifest, std::slice::from_ref(operation))
                        .map_err(|e| format!("json-patch on {key} failed: {e}"))?;
                    budget
                        .spend(&manifest, 1)
                        .map_err(|e| format!("json-patch on {key}: {e}"))?;
                }
            }
            ParsedPatch::Merge(patch) => {
                json_patch::merge(&mut manifest, patch);
                budget
                    .spend(&manifest, 1)
                    .map_err(|e| format!("merge-patch on {key}: {e}"))?;
            }
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

/// `from` and `path` of a `copy` or `move` whose target lies inside its source.
fn into_own_subtree(operation: &json_patch::PatchOperation) -> Option<(&str, &str)> {
    let (from, path) = match operation {
        json_patch::PatchOperation::Copy(op) => (op.from.as_str(), op.path.as_str()),
        json_patch::PatchOperation::Move(op) => (op.from.as_str(), op.path.as_str()),
        _ => return None,
    };
    let inside = from.is_empty() && !path.is_empty()
        || path
            .strip_prefix(from)
            .is_some_and(|rest| rest.starts_with('/'));
    inside.then_some((from, path))
}

#[cfg(test)]
mod tests;
