//! Where a workload's pods get their annotations, and the annotation values
//! for one copy of the workload.

use serde_json::{Map, Value};

use crate::networks;
use crate::nfn::{self, NfnInterface};

/// Multus' network selection annotation.
pub const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";
/// ovn4nfv's interface annotation.
pub const NFN_ANNOTATION: &str = "k8s.plugin.opnfv.org/nfn-network";

/// API groups Kubernetes serves itself (those of client-go's scheme). A
/// kind of these groups that is not a pod or pod template workload has
/// nothing for ovnaction to annotate; a kind of any other group is taken to
/// follow the API conventions and carry its pod template at `spec.template`.
const BUILT_IN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Annotations to set: `(key, value)` pairs.
pub(crate) type Annotations = Vec<(&'static str, String)>;

/// Where a kind's pod metadata is and how forgiving reading it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    /// Path from the object to the object whose `metadata.annotations`
    /// the pods get (the pod template, or the pod itself).
    pub(crate) holder: &'static [&'static str],
    /// Whether the holder's own `metadata.namespace` (else the object's)
    /// fills in elements of the networks annotation without a namespace.
    namespace_from_holder: bool,
    /// A built-in kind: EMCO decodes it into its Go type, where an
    /// unreadable existing annotation is dropped. For other kinds it
    /// fails the cluster.
    built_in: bool,
}

/// Where `kind` of `api_version` carries its pod annotations; `None` for a
/// built-in kind without pods.
pub(crate) fn place(api_version: &str, kind: &str) -> Option<Place> {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let built_in = |holder| {
        Some(Place {
            holder,
            namespace_from_holder: true,
            built_in: true,
        })
    };
    match (group, kind) {
        ("", "Pod") => built_in(&[]),
        ("", "ReplicationController")
        | ("apps" | "extensions", "Deployment" | "DaemonSet" | "ReplicaSet" | "StatefulSet")
        | ("batch", "Job") => built_in(&["spec", "template"]),
        ("batch", "CronJob") => built_in(&["spec", "jobTemplate", "spec", "template"]),
        _ if BUILT_IN_GROUPS.contains(&group) => None,
        _ => Some(Place {
            holder: &["spec", "template"],
            namespace_from_holder: false,
            built_in: false,
        }),
    }
}

/// The annotations one copy of a workload gets. What EMCO would log and
/// pass over (an unreadable annotation of a built-in kind) goes to `notes`.
pub(crate) fn annotations(
    manifest: &Value,
    place: Place,
    interfaces: &[NfnInterface],
    multus: bool,
    notes: &mut Vec<String>,
) -> Result<Annotations, String> {
    let holder = place
        .holder
        .iter()
        .try_fold(manifest, |value, step| value.get(step));
    let existing = Existing::of(holder, place)?;
    let mut values = Vec::with_capacity(2);
    let present = existing.interfaces(notes)?;
    values.push((
        NFN_ANNOTATION,
        nfn::write(&nfn::merge(&present, interfaces)),
    ));
    if multus {
        let namespace_source = if place.namespace_from_holder {
            holder
        } else {
            Some(manifest)
        };
        let default_namespace = namespace_source
            .and_then(|source| source.pointer("/metadata/namespace"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let present = existing.networks(default_namespace, notes)?;
        values.push((NETWORKS_ANNOTATION, networks::with_ovn_network(present)));
    }
    Ok(values)
}

/// The annotations a copy's holder has already, read as EMCO reads them:
/// a built-in kind's unreadable ones count as absent.
struct Existing<'m> {
    annotations: Option<&'m Map<String, Value>>,
    built_in: bool,
}

impl<'m> Existing<'m> {
    fn of(holder: Option<&'m Value>, place: Place) -> Result<Self, String> {
        let annotations = match holder {
            Some(Value::Object(holder)) => existing_annotations(holder, place.built_in)?,
            // A built-in kind's missing template is an empty one in Go; a
            // custom kind must have one (EMCO's would write `null` over the
            // resource).
            None | Some(Value::Null) if place.built_in => None,
            _ => {
                return Err(format!(
                    "has no {} object to annotate",
                    place.holder.join(".")
                ));
            }
        };
        Ok(Existing {
            annotations,
            built_in: place.built_in,
        })
    }

    /// Annotation `key`'s text; `None` when absent or empty.
    fn text(&self, key: &str) -> Result<Option<&'m str>, String> {
        match self
            .annotations
            .and_then(|annotations| annotations.get(key))
        {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str()).filter(|text| !text.is_empty())),
            Some(_) if self.built_in => Ok(None),
            Some(other) => Err(format!("annotation {key} is not a string but {other}")),
        }
    }

    /// The interfaces the nfn annotation names already.
    fn interfaces(&self, notes: &mut Vec<String>) -> Result<Vec<NfnInterface>, String> {
        let Some(text) = self.text(NFN_ANNOTATION)? else {
            return Ok(Vec::new());
        };
        let existing = nfn::parse(text);
        match existing.problem {
            Some(problem) if !self.built_in => Err(format!(
                "annotation {NFN_ANNOTATION} {text:?} cannot be read: {problem}"
            )),
            Some(problem) => {
                notes.push(format!(
                    "annotation {NFN_ANNOTATION} {text:?} is not all readable ({problem}); \
                     the interfaces that could be read are kept"
                ));
                Ok(existing.interfaces)
            }
            None => Ok(existing.interfaces),
        }
    }

    /// The networks the Multus annotation selects already.
    fn networks(
        &self,
        default_namespace: &str,
        notes: &mut Vec<String>,
    ) -> Result<Vec<networks::Selection>, String> {
        let Some(text) = self.text(NETWORKS_ANNOTATION)? else {
            return Ok(Vec::new());
        };
        match networks::parse(text, default_namespace) {
            Ok(elements) => Ok(elements),
            Err(problem) if self.built_in => {
                notes.push(format!(
                    "annotation {NETWORKS_ANNOTATION} {text:?} cannot be read ({problem}); \
                     it is replaced"
                ));
                Ok(Vec::new())
            }
            Err(problem) => Err(format!(
                "annotation {NETWORKS_ANNOTATION} {text:?} cannot be read: {problem}"
            )),
        }
    }
}

/// The holder's `metadata.annotations`, when it has any.
fn existing_annotations(
    holder: &Map<String, Value>,
    built_in: bool,
) -> Result<Option<&Map<String, Value>>, String> {
    let annotations = match holder.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(metadata)) => metadata.get("annotations"),
        Some(_) if built_in => None,
        Some(other) => return Err(format!("has a metadata that is not an object: {other}")),
    };
    match annotations {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(annotations)) => Ok(Some(annotations)),
        Some(_) if built_in => Ok(None),
        Some(other) => Err(format!("has annotations that are not an object: {other}")),
    }
}

/// The JSON merge patch setting `values` as the holder's annotations.
pub(crate) fn merge_patch(place: Place, values: &[(&'static str, String)]) -> Value {
    let annotations: Map<String, Value> = values
        .iter()
        .map(|(key, value)| ((*key).to_owned(), Value::String(value.clone())))
        .collect();
    let mut patch = serde_json::json!({"metadata": {"annotations": annotations}});
    for step in place.holder.iter().rev() {
        let mut parent = Map::new();
        parent.insert((*step).to_owned(), patch);
        patch = Value::Object(parent);
    }
    patch
}

/// Sets `values` in `manifest` as [`merge_patch`] would, so that later
/// workload intents on the same resource see them.
pub(crate) fn apply(manifest: &mut Value, place: Place, values: &[(&'static str, String)]) {
    let mut target = manifest;
    for step in place
        .holder
        .iter()
        .copied()
        .chain(["metadata", "annotations"])
    {
        if !target.is_object() {
            *target = Value::Object(Map::new());
        }
        let Value::Object(object) = target else {
            return;
        };
        target = object.entry(step).or_insert(Value::Null);
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(annotations) = target {
        for (key, value) in values {
            annotations.insert((*key).to_owned(), Value::String(value.clone()));
        }
    }
}
