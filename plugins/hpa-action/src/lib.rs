//! hpa-action, EMCO's hpa-ac (Hardware Platform Awareness action) as a
//! wasmco action controller.
//!
//! It declares no intent kinds of its own: its `intents.json` reads the
//! `hpa-intents` hpa-placement declares (`"reads": ["hpa-intents"]`), and,
//! like EMCO's hpa-ac, it acts on every hpa intent of the deployment intent
//! group whatever name the group's `intents` document gives it.
//!
//! For every resource requirement of every consumer of an app's hpa intents
//! it patches the Deployment `consumer.spec.name` on each cluster the app is
//! placed on:
//!
//! * `spec.replicas` becomes the consumer's `replicas`, when both are set;
//! * a node label (`allocatable: false`) goes into
//!   `spec.template.spec.nodeSelector`;
//! * an amount (`allocatable: true`) goes into the resources of the
//!   container `consumer.spec.container`: `requests[name]` always,
//!   `limits[name]` when a limit is set. Memory comes in MB and is written
//!   in bytes; other requests and limits of the container stay.
//!
//! A Deployment without `metadata` or `spec`, or without `spec.template`, is
//! left as it is (after `replicas`), as EMCO does. It is an error when the
//! app has no such Deployment, when its `metadata.name` is not the
//! consumer's `spec.name`, or when it has no container of that name.

#[allow(
    dead_code,
    reason = "shared with hpa-placement, which reads the parts action does not"
)]
#[path = "../../hpa-placement/src/model.rs"]
mod model;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use wasmco_guest::intents::IntentTree;

use model::{Consumer, HpaIntent, Need, Requirement};

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "action-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

pub use bindings::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AppResources, ClusterResources, ClusterScope, Patch, PatchResource,
};
pub use bindings::wasmco::controller::types::{
    AppPlacement, ClusterTable, ControllerError, Resource, ResourceRef, Strings,
};
use wasmco_guest::{Clusters, StringTable};

wasmco_guest::declare_intents!("../intents.json");

/// The kind hpa-ac patches; EMCO's consumer `kind` is informational.
const DEPLOYMENT: &str = "Deployment";

/// Patches the Deployments of every app that has hpa intents.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let tree = IntentTree::parse_all(&request.intent)
        .map_err(|e| error(format!("hpa intents are not valid: {e}")))?;
    let intents = model::read_intents(&tree).map_err(error)?;
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let clusters: Clusters<'_> = wasmco_guest::clusters!(request.clusters);
    let mut edits = Vec::new();
    for &app_id in &request.apps {
        let app = strings.get(app_id);
        let app_intents: Vec<&HpaIntent> = intents.iter().filter(|i| i.app == app).collect();
        if app_intents.is_empty() {
            continue;
        }
        let Some(placement) = request.placements.iter().find(|p| p.app == app_id) else {
            continue;
        };
        let resources = request.resources.iter().find(|r| r.app == app_id);
        let app_edits = AppPatcher {
            app,
            intents: &app_intents,
            clusters,
            strings,
        }
        .edits(placement, resources)
        .map_err(error)?;
        edits.extend(app_edits);
    }
    Ok(edits)
}

/// Works out one app's patches.
struct AppPatcher<'a> {
    app: &'a str,
    intents: &'a [&'a HpaIntent],
    clusters: Clusters<'a>,
    strings: StringTable<'a>,
}

impl AppPatcher<'_> {
    /// One patch per Deployment and distinct result: clusters that share
    /// their resources (the app's base) are worked out once, and clusters
    /// whose patch comes out the same share one edit.
    fn edits(
        &self,
        placement: &AppPlacement,
        resources: Option<&AppResources>,
    ) -> Result<Vec<ActionEdit>, String> {
        let mut placed: Vec<u32> = placement.clusters.clone();
        placed.sort_unstable();
        placed.dedup();
        if let Some(&unknown) = placed.iter().find(|&&c| c as usize >= self.clusters.len()) {
            return Err(format!(
                "app {}: its placement names unknown cluster {unknown}",
                self.app
            ));
        }
        let base: &[Resource] = resources.map_or(&[], |r| r.base.as_slice());
        let differing: BTreeMap<u32, &[Resource]> = resources
            .map_or(&[][..], |r| r.differing.as_slice())
            .iter()
            .filter(|d| placed.binary_search(&d.cluster).is_ok())
            .map(|d| (d.cluster, d.resources.as_slice()))
            .collect();
        let on_base: Vec<u32> = placed
            .iter()
            .copied()
            .filter(|c| !differing.contains_key(c))
            .collect();
        let variants = std::iter::once((on_base, base)).chain(
            differing
                .iter()
                .map(|(&cluster, &resources)| (vec![cluster], resources)),
        );
        let mut patched: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
        for (variant_clusters, resources) in variants {
            let Some(&first) = variant_clusters.first() else {
                continue;
            };
            for (workload, patch) in self.patches(resources, first)? {
                patched
                    .entry((workload, patch))
                    .or_default()
                    .extend(&variant_clusters);
            }
        }
        Ok(patched
            .into_iter()
            .map(|((workload, patch), mut on)| {
                // The variants split `placed` without overlap, so a patch
                // on as many clusters is on all of them.
                let scope = if on.len() == placed.len() {
                    ClusterScope::All
                } else {
                    on.sort_unstable();
                    ClusterScope::Only(on)
                };
                ActionEdit::Patch(PatchResource {
                    app: self.app.to_owned(),
                    scope,
                    target: ResourceRef {
                        kind: DEPLOYMENT.to_owned(),
                        name: workload,
                    },
                    patch: Patch::JsonPatch(patch),
                })
            })
            .collect())
    }

    /// The JSON Patch of each Deployment the intents change in one set of
    /// resources; `cluster` (one of the clusters using them) names them in
    /// messages.
    fn patches(
        &self,
        resources: &[Resource],
        cluster: u32,
    ) -> Result<Vec<(String, String)>, String> {
        let mut work: BTreeMap<&str, Deployment> = BTreeMap::new();
        for intent in self.intents {
            for consumer in &intent.consumers {
                for requirement in &consumer.requirements {
                    let context = || {
                        format!(
                            "hpa-intent {}, hpa-resource-consumer {}, resource-requirement {}",
                            intent.name, consumer.name, requirement.name
                        )
                    };
                    let deployment = match work.entry(&consumer.workload) {
                        std::collections::btree_map::Entry::Occupied(slot) => slot.into_mut(),
                        std::collections::btree_map::Entry::Vacant(slot) => {
                            let found = find_deployment(resources, &consumer.workload).map_err(
                                |reason| {
                                    format!(
                                        "{}: app {} on cluster {}: {reason}",
                                        context(),
                                        self.app,
                                        self.cluster_name(cluster)
                                    )
                                },
                            )?;
                            slot.insert(found)
                        }
                    };
                    deployment.apply(consumer, requirement).map_err(|reason| {
                        format!(
                            "{}: Deployment {} of app {} on cluster {}: {reason}",
                            context(),
                            consumer.workload,
                            self.app,
                            self.cluster_name(cluster)
                        )
                    })?;
                }
            }
        }
        Ok(work
            .into_iter()
            .filter_map(|(workload, deployment)| {
                deployment.patch().map(|patch| (workload.to_owned(), patch))
            })
            .collect())
    }

    fn cluster_name(&self, cluster: u32) -> String {
        format!(
            "{}+{}",
            self.strings.get(self.clusters.provider(cluster)),
            self.strings.get(self.clusters.name(cluster))
        )
    }
}

fn find_deployment(resources: &[Resource], workload: &str) -> Result<Deployment, String> {
    let resource = resources
        .iter()
        .find(|r| r.kind == DEPLOYMENT && r.name == workload)
        .ok_or_else(|| format!("it has no Deployment {workload}"))?;
    let manifest: Value = serde_json::from_str(&resource.manifest)
        .map_err(|e| format!("Deployment {workload} is not valid JSON: {e}"))?;
    if !manifest.is_object() {
        return Err(format!("Deployment {workload} is not an object"));
    }
    Ok(Deployment {
        manifest,
        replicas: false,
        node_selector: false,
        containers: BTreeSet::new(),
    })
}

/// A Deployment being changed, with the parts changed so far.
struct Deployment {
    manifest: Value,
    replicas: bool,
    node_selector: bool,
    /// Indices of the containers whose resources changed.
    containers: BTreeSet<usize>,
}

impl Deployment {
    /// Applies one requirement of `consumer`.
    fn apply(&mut self, consumer: &Consumer, requirement: &Requirement) -> Result<(), String> {
        let Some(object) = self.manifest.as_object_mut() else {
            return Ok(());
        };
        let name = match object.get("metadata").and_then(Value::as_object) {
            Some(metadata) => metadata
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            None => return Ok(()),
        };
        let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if let Some(replicas) = consumer.replicas.filter(|&n| n > 0)
            && spec.contains_key("replicas")
        {
            spec.insert("replicas".into(), json!(replicas));
            self.replicas = true;
        }
        let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if name != consumer.workload {
            return Err(format!(
                "its metadata.name {name:?} does not match the consumer's spec.name {:?}",
                consumer.workload
            ));
        }
        let pod = template
            .get_mut("spec")
            .and_then(Value::as_object_mut)
            .ok_or("spec.template.spec is not an object")?;
        match &requirement.need {
            Need::Label { key, value } => {
                object_at(pod, "nodeSelector", "spec.template.spec")?
                    .insert(key.clone(), Value::String(value.clone()));
                self.node_selector = true;
            }
            Need::Allocatable(amount) => {
                let wanted = consumer.container.as_deref().unwrap_or_default();
                let containers = pod
                    .get_mut("containers")
                    .and_then(Value::as_array_mut)
                    .map_or(&mut [][..], Vec::as_mut_slice);
                let index = containers
                    .iter()
                    .position(|c| c["name"].as_str() == Some(wanted))
                    .ok_or_else(|| {
                        let names: Vec<&str> = containers
                            .iter()
                            .filter_map(|c| c["name"].as_str())
                            .collect();
                        format!(
                            "it has no container {wanted:?} (the consumer's spec.container); \
                             its containers are {names:?}"
                        )
                    })?;
                let container = containers[index]
                    .as_object_mut()
                    .ok_or("a container is not an object")?;
                let resources = object_at(container, "resources", "the container")?;
                object_at(resources, "requests", "the container's resources")?
                    .insert(amount.resource.clone(), quantity(amount.requests));
                if amount.limits > 0 {
                    object_at(resources, "limits", "the container's resources")?
                        .insert(amount.resource.clone(), quantity(amount.limits));
                }
                self.containers.insert(index);
            }
        }
        Ok(())
    }

    /// The JSON Patch from the Deployment as found to its state now; `None`
    /// when nothing changed. Changed maps are written whole (an `add` of an
    /// existing member replaces it), and each changed container is guarded
    /// by a `test` of its name so a patch meant for another version of
    /// the Deployment fails rather than change the wrong container.
    fn patch(&self) -> Option<String> {
        /// One JSON Patch operation, borrowing its value from the manifest.
        #[derive(serde::Serialize)]
        struct Operation<'a> {
            op: &'static str,
            path: String,
            value: &'a Value,
        }
        let mut operations = Vec::new();
        let spec = &self.manifest["spec"];
        if self.replicas {
            operations.push(Operation {
                op: "replace",
                path: "/spec/replicas".into(),
                value: &spec["replicas"],
            });
        }
        let pod = &spec["template"]["spec"];
        if self.node_selector {
            operations.push(Operation {
                op: "add",
                path: "/spec/template/spec/nodeSelector".into(),
                value: &pod["nodeSelector"],
            });
        }
        for &index in &self.containers {
            let container = &pod["containers"][index];
            let path = format!("/spec/template/spec/containers/{index}");
            operations.push(Operation {
                op: "test",
                path: format!("{path}/name"),
                value: &container["name"],
            });
            operations.push(Operation {
                op: "add",
                path: format!("{path}/resources"),
                value: &container["resources"],
            });
        }
        if operations.is_empty() {
            return None;
        }
        // Values of a JSON document serialise without fail.
        serde_json::to_string(&operations).ok()
    }
}

/// The object at `parent[key]`, created when missing or null.
fn object_at<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    within: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    let slot = parent
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| format!("{key} of {within} is not an object"))
}

/// A Kubernetes quantity of whole units, as a string (the API's form).
fn quantity(amount: i64) -> Value {
    Value::String(amount.to_string())
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct HpaAction;

    impl super::bindings::exports::wasmco::controller::action::Guest for HpaAction {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(HpaAction with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
