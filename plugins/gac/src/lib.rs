//! gac, EMCO's generic action controller, as a wasmco action controller.
//!
//! It serves EMCO's generic action controller API under a deployment intent
//! group (declared in `intents.json`):
//!
//! - `generic-k8s-intents/{genericK8sIntent}`: a named set of resources;
//!   the deployment intent group's `intents` document names the one this
//!   controller acts on (`gac: operator-gac-intent`).
//! - `…/resources/{genericResource}` (multipart, one `file`): an object of
//!   an app. `newObject: "true"`: the file (YAML or JSON) is a new object to
//!   add to the app; for a ConfigMap or Secret it may be left out, and the
//!   object starts empty, named `resourceGVK.name`. `newObject: "false"`:
//!   the app already has the object `resourceGVK` names (from its Helm
//!   chart), and the customizations patch it.
//! - `…/customizations/{customization}` (multipart, any number of `files`):
//!   which of the app's clusters (`clusterSpecific`, `clusterInfo`) get the
//!   resource, and what changes there: `patchType: json` applies
//!   `patchJson` (RFC 6902); `patchType: merge` applies each file as a
//!   Kubernetes strategic merge patch. A new ConfigMap's or Secret's files
//!   become its data, keyed by file name or by `dataKeyOptions`, except
//!   files flagged `mergePatch: "true"`, which are its merge patches.
//!
//! A new object goes to the clusters its customizations select, with the
//! customizations that select a cluster applied there one after the other,
//! in the order the host lists them; a new object without customizations
//! goes to every cluster of its app. An existing object is patched on the
//! clusters each customization selects that hold it.
//!
//! Where this differs from EMCO's gac, and why:
//! - `mode: deny` selects the app's clusters *other* than those named, as
//!   EMCO's design describes (EMCO's code selects none), and the provider is
//!   compared as well as the cluster name.
//! - A new object without customizations is added (EMCO adds none); with
//!   several customizations on one cluster, they all apply there, in order
//!   (EMCO writes the object once per customization, the last one winning,
//!   and lists it that many times in the deployment order).
//! - A template's other fields (labels, `binaryData`, …) are kept for a
//!   ConfigMap or Secret (EMCO keeps only name, namespace, annotations,
//!   type and data); a file that is not UTF-8 text goes to a ConfigMap's
//!   `binaryData`.
//! - An existing object that none of a customization's selected clusters
//!   holds is an error, as is a new object that a cluster already holds
//!   (EMCO skips the first and overwrites the second silently).
//! - `$(http…)$` patch values, which EMCO fetches over HTTP, are refused:
//!   a controller makes no network calls.

mod build;
mod legacy;
mod legacy_intent;
mod select;
mod spec;
mod state;
mod strategic;

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "action-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

use std::collections::{BTreeMap, HashMap, HashSet};

pub use bindings::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AddResource, ClusterScope, Patch, PatchResource,
};
pub use bindings::wasmco::controller::types::{
    ClusterTable, ControllerError, ResourceRef, Strings,
};
use serde_json::Value;
use wasmco_guest::intents::{IntentNode, IntentTree};
use wasmco_guest::{Clusters, StringTable};

use build::{Customization, ObjectKind};
use spec::{PatchType, ResourceSpec};
use state::{AppState, Key};

wasmco_guest::declare_intents!("../intents.json");

/// Whether the intent is gac's own document of before (a controller-intents
/// document the DIG names), not the tree of EMCO's kinds the host builds.
fn is_legacy(intent: &str) -> bool {
    // Only which keys are there matters: their values are skipped, not built.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Keys {
        deployment_intent_group: Option<serde::de::IgnoredAny>,
        resources: Option<serde::de::IgnoredAny>,
        customizations: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Keys>(intent).is_ok_and(|keys| {
        keys.deployment_intent_group.is_none()
            && (keys.resources.is_some() || keys.customizations.is_some())
    })
}

/// The collection segments of the child kinds, as `intents.json` declares them.
const RESOURCES: &str = "resources";
const CUSTOMIZATIONS: &str = "customizations";

/// Adds and patches the resources of the generic k8s intent the deployment
/// names.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    // A tree the host built names the group: only a document that parses
    // to one without intents may be gac's own of before.
    let tree = IntentTree::parse_named(&request.intent);
    let could_be_legacy = match &tree {
        Ok(tree) => tree.intents.is_empty(),
        Err(_) => true,
    };
    if could_be_legacy && is_legacy(&request.intent) {
        return legacy::act(request);
    }
    let tree = tree.map_err(|e| ControllerError {
        message: format!("the gac intent tree is not valid: {e}"),
    })?;
    if tree.intents.is_empty() {
        return Err(ControllerError {
            message: format!(
                "the deployment intent group names generic k8s intent {}, which it does not have",
                tree.name
            ),
        });
    }
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
        let strings = self.strings;
        let clusters = self.clusters;
        let gvk = &spec.resource_gvk;
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
            let fail = |reason: String| ControllerError {
                message: format!(
                    "{context}, customization {:?}: {reason}",
                    customization.name
                ),
            };
            let missing = || {
                fail(format!(
                    "app {:?} has no {} {} on the clusters the customization selects ({})",
                    spec.app,
                    gvk.kind,
                    gvk.name,
                    list(&strings, &clusters, selection.iter().map(|&p| placed[p]))
                ))
            };
            let kind = state.find_kind(&gvk.kind, &gvk.name).ok_or_else(missing)?;
            let key: Key = (kind, gvk.name.clone());
            let tracked = state.track(&key).map_err(fail)?;
            let present = tracked.present();
            let targets: Vec<usize> = selection
                .iter()
                .copied()
                .filter(|position| present.binary_search(position).is_ok())
                .collect();
            if targets.is_empty() {
                return Err(missing());
            }
            let everywhere = targets.len() == present.len();
            let target = ResourceRef {
                kind: key.0.clone(),
                name: key.1.clone(),
            };
            let groups = tracked.groups(&targets);
            let mut results = Vec::with_capacity(groups.len());
            for (version, group) in &groups {
                let before = tracked.value(*version).cloned().unwrap_or_default();
                let mut after = before.clone();
                customization
                    .apply_patch(&mut after, &key.0)
                    .map_err(|reason| {
                        fail(format!(
                            "on cluster {}: {reason}",
                            describe(&strings, &clusters, placed[group[0]])
                        ))
                    })?;
                results.push((before, after));
            }
            if customization.patch == Some(PatchType::Json) {
                // The host applies the user's own operations, which it does
                // to every cluster's version alike.
                self.edits.push(ActionEdit::Patch(PatchResource {
                    app: spec.app.clone(),
                    scope: scope(everywhere, &targets, &placed),
                    target: target.clone(),
                    patch: Patch::JsonPatch(customization.json_patch_text()),
                }));
            } else {
                // A strategic merge is no RFC 7386 merge: hand the host the
                // exact change, per version.
                let single = groups.len() == 1;
                for ((_, group), (before, after)) in groups.iter().zip(&results) {
                    let diff = json_patch::diff(before, after);
                    if diff.0.is_empty() {
                        continue;
                    }
                    let text = serde_json::to_string(&diff).map_err(|e| fail(e.to_string()))?;
                    self.edits.push(ActionEdit::Patch(PatchResource {
                        app: spec.app.clone(),
                        scope: scope(everywhere && single, group, &placed),
                        target: target.clone(),
                        patch: Patch::JsonPatch(text),
                    }));
                }
            }
            for ((version, group), (_, after)) in groups.into_iter().zip(results) {
                tracked.set(version, &group, Some(after));
            }
        }
        Ok(())
    }
}

/// `all` when the edit covers every cluster of the app, else the clusters
/// at `positions`.
fn scope(everywhere: bool, positions: &[usize], placed: &[u32]) -> ClusterScope {
    if everywhere {
        ClusterScope::All
    } else {
        ClusterScope::Only(positions.iter().map(|&p| placed[p]).collect())
    }
}

/// `provider+cluster`, as EMCO names a cluster.
fn describe(strings: &StringTable<'_>, clusters: &Clusters<'_>, cluster: u32) -> String {
    format!(
        "{}+{}",
        strings.get(clusters.provider(cluster)),
        strings.get(clusters.name(cluster))
    )
}

fn list(
    strings: &StringTable<'_>,
    clusters: &Clusters<'_>,
    cluster_list: impl Iterator<Item = u32>,
) -> String {
    let mut names: Vec<String> = cluster_list
        .map(|cluster| describe(strings, clusters, cluster))
        .collect();
    if names.len() > 5 {
        let more = names.len() - 5;
        names.truncate(5);
        names.push(format!("and {more} more"));
    }
    names.join(", ")
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct Gac;

    impl super::bindings::exports::wasmco::controller::action::Guest for Gac {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(Gac with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
