//! Action edits: resources added, patched or removed per cluster, checked
//! and applied all or none within the edit budget.

use std::collections::{HashMap, HashSet};

use wasmco_core::resource::{Resource, ResourceKey};
use wasmco_runtime::contract::{ActionEdit, ClusterScope};

use super::context::DraftContext;
use super::model::{AppDraft, ClusterIndex, EditError, Override};
use super::patch::ParsedPatch;
use crate::budget::{Budget, EditLimits};

impl DraftContext {
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
