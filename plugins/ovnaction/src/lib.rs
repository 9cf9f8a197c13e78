//! ovnaction, EMCO's OVN action controller, as a wasmco action controller.
//!
//! Its intents hang under a deployment intent group, as EMCO's do:
//!
//! ```text
//! …/network-controller-intent/{netControllerIntent}
//!     /workload-intents/{workloadIntent}      {app, workloadResource, type}
//!         /interfaces/{interfaceIntent}       {interface, name, defaultGateway, ipAddress, macAddress}
//! ```
//!
//! For each workload intent of the network controller intent the deployment
//! names, on every cluster its app is placed on, the resource
//! `workloadResource` of kind `type` (spelled as the resource's `kind`,
//! case included) gets two annotations where its pods get them (the pod
//! template, a CronJob's job template, a Pod's own metadata, or
//! `spec.template` of a custom kind), exactly as EMCO writes them:
//!
//! - `k8s.plugin.opnfv.org/nfn-network`: `{"type":"ovn4nfv","interface":[…]}`,
//!   the interfaces already there merged with the intent's;
//! - `k8s.v1.cni.cncf.io/networks`: the networks already there plus
//!   `{"name":"ovn-networkobj","namespace":"default","cni-args":null}`,
//!   unless the cluster's key/value pairs say Multus is not in use
//!   (`CNI-Networking-Nodus-CNI-For-all-interfaces` true, or a
//!   `CNI-Networking-Multi-CNI-Wrapper` other than `multus`).
//!
//! The edits are JSON merge patches of those annotations, one for all the
//! app's clusters when they all get the same values, else one per set of
//! clusters that do.
//!
//! As EMCO, it passes over a workload intent without interfaces and a
//! cluster lacking the resource, and drops an unreadable annotation of a
//! built-in kind; it says so on stderr, which the host logs. Unlike EMCO,
//! which logs and writes nothing, it fails when the resource is on none of
//! the app's clusters (a misspelt `type` is the usual cause), when the kind
//! has no pods, when a custom kind has no `spec.template` (EMCO would write
//! `null` over the resource) and when a custom kind's existing annotation
//! cannot be read; and it also annotates the pod templates of the older
//! `apps`/`extensions` versions and of `batch/v1` CronJobs, which EMCO's
//! Go types leave alone.

mod gojson;
mod networks;
mod nfn;
mod workload;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use wasmco_guest::intents::{IntentNode, IntentTree};
use wasmco_guest::{Clusters, StringTable};

pub use networks::{OVN_NETWORK_NAME, OVN_NETWORK_NAMESPACE};
pub use nfn::NfnInterface;
pub use workload::{NETWORKS_ANNOTATION, NFN_ANNOTATION};

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
    ActionEdit, ActionRequest, AppResources, ClusterScope, Patch, PatchResource,
};
pub use bindings::wasmco::controller::types::{
    ClusterTable, ControllerError, Resource, ResourceRef, Strings,
};

wasmco_guest::declare_intents!("../intents.json");

/// The collection segments of the child kinds, as `intents.json` declares them.
const WORKLOAD_INTENTS: &str = "workload-intents";
const INTERFACES: &str = "interfaces";

/// Cluster key/value pair: `true` when ovn4nfv (Nodus) serves every
/// interface, so that pods need no Multus annotation.
pub const NODUS_FOR_ALL_INTERFACES: &str = "CNI-Networking-Nodus-CNI-For-all-interfaces";
/// Cluster key/value pair: the multi-CNI wrapper in use (`multus` if unset).
pub const MULTI_CNI_WRAPPER: &str = "CNI-Networking-Multi-CNI-Wrapper";

/// A workload intent's spec.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadSpec {
    app: String,
    workload_resource: String,
    #[serde(rename = "type")]
    kind: String,
}

/// An interface intent's spec.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InterfaceSpec {
    interface: String,
    name: String,
    #[serde(default)]
    default_gateway: String,
    #[serde(default)]
    ip_address: String,
    #[serde(default)]
    mac_address: String,
}

impl From<InterfaceSpec> for NfnInterface {
    fn from(spec: InterfaceSpec) -> Self {
        NfnInterface {
            interface: spec.interface,
            name: spec.name,
            // EMCO stores an absent gateway as "false".
            default_gateway: if spec.default_gateway.is_empty() {
                "false".to_owned()
            } else {
                spec.default_gateway
            },
            ip_address: spec.ip_address,
            mac_address: spec.mac_address,
        }
    }
}

/// Annotates the workloads of the network controller intent the deployment
/// names.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let tree = IntentTree::parse_named(&request.intent)
        .map_err(|e| error(format!("the ovnaction intent tree is not valid: {e}")))?;
    if tree.intents.is_empty() {
        return Err(error(format!(
            "network controller intent {:?} not found in deployment intent group {:?}",
            tree.name, tree.deployment_intent_group.name
        )));
    }
    let mut workspace = Workspace::new(request);
    let mut edits = Vec::new();
    for controller_intent in &tree.intents {
        for workload_intent in controller_intent.children(WORKLOAD_INTENTS) {
            let context = |reason: String| {
                error(format!(
                    "workload intent {:?} of network controller intent {:?}: {reason}",
                    workload_intent.name(),
                    controller_intent.name()
                ))
            };
            let spec: WorkloadSpec = serde::Deserialize::deserialize(&workload_intent.spec)
                .map_err(|e| context(format!("spec is not valid: {e}")))?;
            let interfaces = interfaces(workload_intent).map_err(context)?;
            let mut notes = Vec::new();
            if interfaces.is_empty() {
                // EMCO passes over it with a warning.
                notes.push("it has no interface intents; nothing to do".to_owned());
            } else {
                edits.extend(
                    workspace
                        .annotate(&spec, &interfaces, &mut notes)
                        .map_err(context)?,
                );
            }
            // Clusters sharing a copy may have noted the same thing.
            let mut seen = std::collections::BTreeSet::new();
            notes.retain(|note| seen.insert(note.clone()));
            for note in notes {
                // The host logs what a controller writes to stderr.
                eprintln!(
                    "workload intent {:?} of network controller intent {:?}: {note}",
                    workload_intent.name(),
                    controller_intent.name()
                );
            }
        }
    }
    Ok(edits)
}

/// The interfaces of a workload intent, in the tree's order.
fn interfaces(workload_intent: &IntentNode) -> Result<Vec<NfnInterface>, String> {
    workload_intent
        .children(INTERFACES)
        .iter()
        .map(|node| {
            serde_json::from_value::<InterfaceSpec>(node.spec.clone())
                .map(NfnInterface::from)
                .map_err(|e| format!("interface intent {:?}: spec is not valid: {e}", node.name()))
        })
        .collect()
}

/// The request's resources as this call's edits leave them, so that a
/// workload intent sees what earlier ones wrote on the same resource.
struct Workspace<'r> {
    request: &'r ActionRequest,
    strings: StringTable<'r>,
    clusters: Clusters<'r>,
    /// String ids of the two CNI keys, when any cluster has them.
    nodus_key: Option<u32>,
    wrapper_key: Option<u32>,
    copies: BTreeMap<(u32, String, String), Copies>,
}

/// The copies of one resource of an app: the base every cluster without a
/// resource list of its own gets, and those lists' copies (`None` where
/// the list lacks it).
#[derive(Debug, Default)]
struct Copies {
    base: Option<Value>,
    own: BTreeMap<u32, Option<Value>>,
}

impl Copies {
    fn on(&self, cluster: u32) -> Option<&Value> {
        match self.own.get(&cluster) {
            Some(copy) => copy.as_ref(),
            None => self.base.as_ref(),
        }
    }
}

/// Clusters that get the same annotations, with the patch that sets them.
struct Group {
    values: workload::Annotations,
    place: workload::Place,
    clusters: Vec<u32>,
}

impl<'r> Workspace<'r> {
    fn new(request: &'r ActionRequest) -> Self {
        let strings = StringTable::new(&request.strings.data, &request.strings.ends);
        Workspace {
            request,
            strings,
            clusters: wasmco_guest::clusters!(request.clusters),
            nodus_key: strings.find(NODUS_FOR_ALL_INTERFACES),
            wrapper_key: strings.find(MULTI_CNI_WRAPPER),
            copies: BTreeMap::new(),
        }
    }

    /// The edits annotating `spec`'s workload on each of its app's clusters.
    fn annotate(
        &mut self,
        spec: &WorkloadSpec,
        interfaces: &[NfnInterface],
        notes: &mut Vec<String>,
    ) -> Result<Vec<ActionEdit>, String> {
        let request = self.request;
        let app = self
            .strings
            .find(&spec.app)
            .filter(|id| request.apps.contains(id))
            .ok_or_else(|| format!("app {:?} is not part of the composite app", spec.app))?;
        let placed: Vec<u32> = request
            .placements
            .iter()
            .filter(|placement| placement.app == app)
            .flat_map(|placement| placement.clusters.iter().copied())
            .collect();
        if placed.is_empty() {
            return Ok(Vec::new());
        }
        let key = (app, spec.kind.clone(), spec.workload_resource.clone());
        if !self.copies.contains_key(&key) {
            let copies = self.read_copies(app, spec)?;
            self.copies.insert(key.clone(), copies);
        }
        let copies = &self.copies[&key];
        let mut groups: Vec<Group> = Vec::new();
        let mut absent = Vec::new();
        // No cluster has a copy of its own or a kv-pair that changes the
        // CNI: one group, without looking at each of (maybe thousands).
        let uniform =
            copies.own.is_empty() && self.nodus_key.is_none() && self.wrapper_key.is_none();
        let each = if uniform { &[][..] } else { &placed[..] };
        if uniform {
            match &copies.base {
                Some(manifest) => {
                    let multus = self.uses_multus(placed[0]);
                    let (place, values) =
                        annotations_of(manifest, spec, interfaces, multus, notes)?;
                    groups.push(Group {
                        values,
                        place,
                        clusters: placed.clone(),
                    });
                }
                None => absent.clone_from(&placed),
            }
        }
        let multus: Vec<bool> = each
            .iter()
            .map(|&cluster| self.uses_multus(cluster))
            .collect();
        // Clusters sharing the base copy differ only in Multus.
        let mut from_base: [Option<usize>; 2] = [None, None];
        for (&cluster, &multus) in each.iter().zip(&multus) {
            let Some(manifest) = copies.on(cluster) else {
                absent.push(cluster);
                continue;
            };
            let shares_base = !copies.own.contains_key(&cluster);
            if let Some(group) = from_base[usize::from(multus)].filter(|_| shares_base) {
                groups[group].clusters.push(cluster);
                continue;
            }
            let (place, values) = annotations_of(manifest, spec, interfaces, multus, notes)?;
            let group = match groups
                .iter()
                .position(|group| group.values == values && group.place == place)
            {
                Some(group) => {
                    groups[group].clusters.push(cluster);
                    group
                }
                None => {
                    groups.push(Group {
                        values,
                        place,
                        clusters: vec![cluster],
                    });
                    groups.len() - 1
                }
            };
            if shares_base {
                from_base[usize::from(multus)] = Some(group);
            }
        }
        if absent.len() == placed.len() {
            return Err(self.missing(app, spec));
        }
        if !absent.is_empty() {
            // EMCO logs each such cluster and goes on with the others.
            notes.push(format!(
                "app {:?} has no {} named {:?} on {}; those clusters are left as they are",
                spec.app,
                spec.kind,
                spec.workload_resource,
                self.describe_clusters(&absent)
            ));
        }

        let target = ResourceRef {
            kind: spec.kind.clone(),
            name: spec.workload_resource.clone(),
        };
        let copies = self.copies.get_mut(&key).ok_or("the resource vanished")?;
        let everywhere = groups.len() == 1;
        let mut edits = Vec::with_capacity(groups.len());
        for group in groups {
            let scope = if everywhere {
                for copy in copies
                    .base
                    .iter_mut()
                    .chain(copies.own.values_mut().flatten())
                {
                    workload::apply(copy, group.place, &group.values);
                }
                ClusterScope::All
            } else {
                for &cluster in &group.clusters {
                    // The host gives a cluster sharing the base its own copy.
                    if !copies.own.contains_key(&cluster) {
                        copies.own.insert(cluster, copies.base.clone());
                    }
                    if let Some(Some(copy)) = copies.own.get_mut(&cluster) {
                        workload::apply(copy, group.place, &group.values);
                    }
                }
                ClusterScope::Only(group.clusters)
            };
            let patch = workload::merge_patch(group.place, &group.values);
            edits.push(ActionEdit::Patch(PatchResource {
                app: spec.app.clone(),
                scope,
                target: target.clone(),
                patch: Patch::MergePatch(patch.to_string()),
            }));
        }
        Ok(edits)
    }

    /// The copies of `spec`'s resource among `app`'s resources.
    fn read_copies(&self, app: u32, spec: &WorkloadSpec) -> Result<Copies, String> {
        let Some(resources) = self.request.resources.iter().find(|r| r.app == app) else {
            return Ok(Copies::default());
        };
        let find = |list: &[Resource]| -> Result<Option<Value>, String> {
            list.iter()
                .find(|r| r.kind == spec.kind && r.name == spec.workload_resource)
                .map(|r| {
                    serde_json::from_str(&r.manifest).map_err(|e| {
                        format!("resource {}+{} is not valid JSON: {e}", r.name, r.kind)
                    })
                })
                .transpose()
        };
        let mut copies = Copies {
            base: find(&resources.base)?,
            own: BTreeMap::new(),
        };
        for differing in &resources.differing {
            copies
                .own
                .insert(differing.cluster, find(&differing.resources)?);
        }
        Ok(copies)
    }

    /// Whether `cluster` uses Multus, from its key/value pairs (the last
    /// value of a key wins); EMCO's defaults when it has none.
    fn uses_multus(&self, cluster: u32) -> bool {
        let (mut nodus_for_all, mut wrapper) = ("false", "multus");
        for (key, value) in self.clusters.kv(cluster) {
            if Some(key) == self.nodus_key {
                nodus_for_all = self.strings.get(value);
            } else if Some(key) == self.wrapper_key {
                wrapper = self.strings.get(value);
            }
        }
        !go_parse_bool(nodus_for_all).unwrap_or(false) && go_equal_fold(wrapper, "multus")
    }

    /// `clusters` as EMCO names them (`provider+cluster`), the first few.
    fn describe_clusters(&self, clusters: &[u32]) -> String {
        const SHOWN: usize = 5;
        let mut names: Vec<String> = clusters
            .iter()
            .take(SHOWN)
            .map(|&cluster| {
                format!(
                    "{}+{}",
                    self.strings.get(self.clusters.provider(cluster)),
                    self.strings.get(self.clusters.name(cluster))
                )
            })
            .collect();
        if clusters.len() > SHOWN {
            names.push(format!("{} more", clusters.len() - SHOWN));
        }
        format!("cluster {}", names.join(", "))
    }

    /// The error for a workload resource found on none of the app's clusters.
    fn missing(&self, app: u32, spec: &WorkloadSpec) -> String {
        let resources = self.request.resources.iter().filter(|r| r.app == app);
        let near = resources
            .flat_map(|r| {
                r.base
                    .iter()
                    .chain(r.differing.iter().flat_map(|d| d.resources.iter()))
            })
            .find(|r| r.name == spec.workload_resource && r.kind.eq_ignore_ascii_case(&spec.kind));
        let hint = match near {
            Some(r) => format!(
                " (it has a {} of that name: type must be the kind exactly)",
                r.kind
            ),
            None => String::new(),
        };
        format!(
            "app {:?} has no {} named {:?} on any of its clusters{hint}",
            spec.app, spec.kind, spec.workload_resource
        )
    }
}

/// Where one copy of the workload is annotated, and with what.
fn annotations_of(
    manifest: &Value,
    spec: &WorkloadSpec,
    interfaces: &[NfnInterface],
    multus: bool,
    notes: &mut Vec<String>,
) -> Result<(workload::Place, workload::Annotations), String> {
    let api_version = manifest["apiVersion"].as_str().unwrap_or_default();
    let describe = || format!("{} {:?} ({api_version})", spec.kind, spec.workload_resource);
    let place = workload::place(api_version, &spec.kind)
        .ok_or_else(|| format!("{} has no pods to attach networks to", describe()))?;
    let mut found = Vec::new();
    let values = workload::annotations(manifest, place, interfaces, multus, &mut found)
        .map_err(|reason| format!("{} {reason}", describe()))?;
    notes.extend(
        found
            .into_iter()
            .map(|note| format!("{}: {note}", describe())),
    );
    Ok((place, values))
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strings.EqualFold` against a lower-case ASCII word.
fn go_equal_fold(text: &str, word: &str) -> bool {
    gojson::folds_to(text, word)
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct OvnAction;

    impl super::bindings::exports::wasmco::controller::action::Guest for OvnAction {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(OvnAction with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
