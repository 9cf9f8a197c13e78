//! One call over the generic k8s intents of a tree the host built: the
//! apps it touched so far, and the edits it made.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;
use wasmco_guest::intents::{IntentNode, IntentTree};
use wasmco_guest::{Clusters, StringTable};

use crate::build::{self, Customization, ObjectKind};
use crate::clusters::{describe, scope};
use crate::patch::Patching;
use crate::select;
use crate::spec::ResourceSpec;
use crate::state::{AppState, Key};
use crate::{ActionEdit, ActionRequest, AddResource, ControllerError};

/// The collection segments of the child kinds, as `intents.json` declares them.
const RESOURCES: &str = "resources";
const CUSTOMIZATIONS: &str = "customizations";

/// Adds and patches the resources of `tree`'s generic k8s intents.
pub fn act(request: &ActionRequest, tree: &IntentTree) -> Result<Vec<ActionEdit>, ControllerError> {
    let mut run = Run::new(request);
    for intent in &tree.intents {
        for resource in intent.children(RESOURCES) {
            let context = format!(
                "generic k8s intent {:?}, resource {:?}",
                intent.name(),
                resource.name()
            );
            run.resource(resource, &context)?;
        }
    }
    Ok(run.edits)
}

/// One call: the request, the apps it touched so far, and the edits.
struct Run<'r> {
    request: &'r ActionRequest,
    strings: StringTable<'r>,
    clusters: Clusters<'r>,
    apps: HashMap<String, AppState<'r>>,
    edits: Vec<ActionEdit>,
}

impl<'r> Run<'r> {
    fn new(request: &'r ActionRequest) -> Self {
        Run {
            request,
            strings: StringTable::new(&request.strings.data, &request.strings.ends),
            clusters: wasmco_guest::clusters!(request.clusters),
            apps: HashMap::new(),
            edits: Vec::new(),
        }
    }

    fn resource(&mut self, node: &IntentNode, context: &str) -> Result<(), ControllerError> {
        let fail = |reason: String| ControllerError {
            message: format!("{context}: {reason}"),
        };
        let spec: ResourceSpec = serde::Deserialize::deserialize(&node.spec)
            .map_err(|e| fail(format!("its spec is not valid: {e}")))?;
        let kind = ObjectKind::of(&spec.resource_gvk.kind);
        let mut customizations = Vec::new();
        for child in node.children(CUSTOMIZATIONS) {
            let customization = Customization::load(child, kind)
                .map_err(|reason| fail(format!("customization {:?}: {reason}", child.name())))?;
            if !spec.new_object && customization.patch.is_none() {
                return Err(fail(format!(
                    "customization {:?}: the resource patches an existing object \
                     (newObject is false), so patchType must be json or merge",
                    child.name()
                )));
            }
            customizations.push(customization);
        }
        self.app(&spec.app).map_err(fail)?;
        let selections: Vec<Vec<usize>> = {
            let app = &self.apps[&spec.app];
            customizations
                .iter()
                .map(|c| select::select(&c.spec, &app.placed, &self.strings, &self.clusters))
                .collect()
        };
        if spec.new_object {
            let object = match (&node.file_object, &node.file) {
                (Some(read_by_the_host), _) => {
                    build::checked_template(kind, read_by_the_host.clone())
                }
                (None, Some(_)) => {
                    let template = node
                        .file_bytes()
                        .ok_or_else(|| fail("its file is not base64".into()))?;
                    build::base_object(kind, &spec.resource_gvk, Some(&template))
                }
                (None, None) => build::base_object(kind, &spec.resource_gvk, None),
            }
            .map_err(fail)?;
            self.create(&spec, kind, object, &customizations, &selections, context)
        } else {
            self.patch_existing(&spec, &customizations, &selections, context)
        }
    }

    /// The state of app `name`, set up from the request the first time.
    fn app(&mut self, name: &str) -> Result<(), String> {
        if self.apps.contains_key(name) {
            return Ok(());
        }
        let request = self.request;
        let strings = self.strings;
        let Some(id) = request
            .apps
            .iter()
            .copied()
            .find(|&app| strings.get(app) == name)
        else {
            return Err(format!(
                "app {name:?} is not an app of the composite app being deployed"
            ));
        };
        let mut placements = request.placements.iter().filter(|p| p.app == id);
        let placed: Vec<u32> = match (placements.next(), placements.next()) {
            // As the host sends it: one placement, each cluster once, in
            // table order.
            (Some(only), None) if only.clusters.is_sorted_by(|a, b| a < b) => only.clusters.clone(),
            _ => {
                // Cluster indices are dense: a bit per cluster finds repeats
                // without hashing a thousand of them.
                let mut seen = vec![false; request.clusters.provider.len()];
                request
                    .placements
                    .iter()
                    .filter(|p| p.app == id)
                    .flat_map(|p| p.clusters.iter().copied())
                    .filter(|&cluster| match seen.get_mut(cluster as usize) {
                        Some(taken) => !std::mem::replace(taken, true),
                        // Out of the table: kept, and refused where it is used.
                        None => true,
                    })
                    .collect()
            }
        };
        let resources = request.resources.iter().find(|r| r.app == id);
        let base = resources.map_or(&[][..], |r| r.base.as_slice());
        let differing = resources
            .into_iter()
            .flat_map(|r| r.differing.iter())
            .map(|d| (d.cluster, d.resources.as_slice()));
        self.apps
            .insert(name.to_owned(), AppState::new(placed, base, differing));
        Ok(())
    }

    /// Adds a new object: on the clusters its customizations select, each
    /// with those customizations applied in order; on every cluster of the
    /// app when it has none.
    fn create(
        &mut self,
        spec: &ResourceSpec,
        kind: ObjectKind,
        object: Value,
        customizations: &[Customization<'_>],
        selections: &[Vec<usize>],
        context: &str,
    ) -> Result<(), ControllerError> {
        let fail = |reason: String| ControllerError {
            message: format!("{context}: {reason}"),
        };
        let placed = self.apps[&spec.app].placed.len();
        if let [selection] = selections {
            // One customization: the clusters it selects are the one group.
            if selection.is_empty() {
                return Ok(());
            }
            let mut built = object;
            let customization = &customizations[0];
            let in_customization =
                |reason: String| fail(format!("customization {:?}: {reason}", customization.name));
            customization
                .add_data(&mut built, kind, &mut HashSet::new())
                .map_err(in_customization)?;
            customization
                .apply_patch(&mut built, &spec.resource_gvk.kind)
                .map_err(in_customization)?;
            return self.add(&spec.app, built, selection).map_err(fail);
        }
        // Clusters selected by the same customizations get the same object:
        // build it once per such group.
        let mut chosen_by: Vec<Vec<usize>> = vec![Vec::new(); placed];
        for (index, selection) in selections.iter().enumerate() {
            for &position in selection {
                chosen_by[position].push(index);
            }
        }
        let mut groups: BTreeMap<Vec<usize>, Vec<usize>> = BTreeMap::new();
        for (position, chosen) in chosen_by.into_iter().enumerate() {
            if customizations.is_empty() || !chosen.is_empty() {
                groups.entry(chosen).or_default().push(position);
            }
        }
        let mut groups: Vec<(Vec<usize>, Vec<usize>)> = groups.into_iter().collect();
        groups.sort_by_key(|(_, positions)| positions[0]);
        for (chosen, positions) in groups {
            let mut built = object.clone();
            let mut earlier_keys = HashSet::new();
            for &index in &chosen {
                let customization = &customizations[index];
                let in_customization = |reason: String| {
                    fail(format!("customization {:?}: {reason}", customization.name))
                };
                customization
                    .add_data(&mut built, kind, &mut earlier_keys)
                    .map_err(in_customization)?;
                customization
                    .apply_patch(&mut built, &spec.resource_gvk.kind)
                    .map_err(in_customization)?;
            }
            self.add(&spec.app, built, &positions).map_err(fail)?;
        }
        Ok(())
    }

    /// Adds `object` to app `app` on `positions`, which must not hold it yet.
    fn add(&mut self, app: &str, object: Value, positions: &[usize]) -> Result<(), String> {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if kind.is_empty() || name.is_empty() {
            return Err("the object has no kind or metadata.name once customized".into());
        }
        let strings = self.strings;
        let clusters = self.clusters;
        let state = self
            .apps
            .get_mut(app)
            .ok_or_else(|| format!("internal: app {app:?} not set up"))?;
        let placed = state.placed.clone();
        let key: Key = (kind, name);
        let tracked = state.track(&key)?;
        if let Some(&taken) = positions
            .iter()
            .find(|&&position| tracked.at(position).is_some())
        {
            return Err(format!(
                "app {app:?} already has {} {} on cluster {}",
                key.0,
                key.1,
                describe(&strings, &clusters, placed[taken])
            ));
        }
        let everywhere = positions.len() == placed.len() && !tracked.in_base;
        let manifest = serde_json::to_string(&object).map_err(|e| e.to_string())?;
        let mut groups = tracked.groups(positions);
        // Each group holds its own copy; the last takes the object itself.
        let last = groups.pop();
        for (version, group) in groups {
            tracked.set(version, &group, Some(object.clone()));
        }
        if let Some((version, group)) = last {
            tracked.set(version, &group, Some(object));
        }
        self.edits.push(ActionEdit::Add(AddResource {
            app: app.to_owned(),
            scope: scope(everywhere, positions, &placed),
            manifest,
        }));
        Ok(())
    }
    /// Patches the app's object `resourceGVK` names, customization by
    /// customization, on the clusters each selects that hold it.
    fn patch_existing(
        &mut self,
        spec: &ResourceSpec,
        customizations: &[Customization<'_>],
        selections: &[Vec<usize>],
        context: &str,
    ) -> Result<(), ControllerError> {
        let state = self
            .apps
            .get_mut(&spec.app)
            .ok_or_else(|| ControllerError {
                message: format!("{context}: internal: app not set up"),
            })?;
        let placed = state.placed.clone();
        for (customization, selection) in customizations.iter().zip(selections) {
            if selection.is_empty() {
                continue;
            }
            let patching = Patching {
                spec,
                customization,
                context,
                strings: self.strings,
                clusters: self.clusters,
                placed: &placed,
            };
            patching.apply(state, selection, &mut self.edits)?;
        }
        Ok(())
    }
}
