//! Kubernetes strategic merge patch, as `kubectl patch --type strategic`
//! applies it, for the built-in kinds EMCO's gac patches.
//!
//! Maps merge key by key and `null` deletes a key, as in an RFC 7386 merge
//! patch. Lists differ: most are replaced whole, but those Kubernetes marks
//! `patchStrategy: merge` merge item by item, on their merge key (a
//! Deployment's `containers` by `name`) or, for lists of scalars (an
//! object's `finalizers`), as a set. The directives `$patch` (`replace`,
//! `delete`, `merge`), `$retainKeys` and `$deleteFromPrimitiveList/<list>`
//! are honoured; `$setElementOrder/<list>` (an ordering hint kubectl writes)
//! is dropped.
//!
//! A kind this module does not know (a custom resource) merges as an
//! RFC 7386 merge patch: its lists are replaced.

use serde_json::{Map, Value};

/// What the patch machinery knows about a value.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Maps merge, lists are replaced.
    Plain,
    /// A map some of whose fields merge otherwise.
    Fields(&'static [(&'static str, Shape)]),
    /// A list of maps merged item by item on the named key; the items have
    /// the given fields.
    Keyed(&'static str, &'static [(&'static str, Shape)]),
    /// A list of scalars merged as a set.
    Set,
}

use Shape::{Fields, Keyed, Set};

// The merge keys below are those of the Kubernetes API types
// (`patchMergeKey` with `patchStrategy: merge`).

const OBJECT_META: &[(&str, Shape)] =
    &[("finalizers", Set), ("ownerReferences", Keyed("uid", &[]))];

const CONTAINER: &[(&str, Shape)] = &[
    ("ports", Keyed("containerPort", &[])),
    ("env", Keyed("name", &[])),
    ("volumeMounts", Keyed("mountPath", &[])),
    ("volumeDevices", Keyed("devicePath", &[])),
];

const POD_SPEC: &[(&str, Shape)] = &[
    ("containers", Keyed("name", CONTAINER)),
    ("initContainers", Keyed("name", CONTAINER)),
    ("ephemeralContainers", Keyed("name", CONTAINER)),
    ("volumes", Keyed("name", &[])),
    ("imagePullSecrets", Keyed("name", &[])),
    ("hostAliases", Keyed("ip", &[])),
    ("topologySpreadConstraints", Keyed("topologyKey", &[])),
    ("resourceClaims", Keyed("name", &[])),
    ("schedulingGates", Keyed("name", &[])),
];

const POD_TEMPLATE: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("spec", Fields(POD_SPEC)),
];

/// The spec of every kind that runs pods from `spec.template`.
const WORKLOAD_SPEC: &[(&str, Shape)] = &[("template", Fields(POD_TEMPLATE))];

const JOB_TEMPLATE: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("spec", Fields(WORKLOAD_SPEC)),
];

const POD: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("spec", Fields(POD_SPEC)),
];

const WORKLOAD: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("spec", Fields(WORKLOAD_SPEC)),
];

const CRON_JOB: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("spec", Fields(&[("jobTemplate", Fields(JOB_TEMPLATE))])),
];

const POD_TEMPLATE_KIND: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("template", Fields(POD_TEMPLATE)),
];

const SERVICE: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("spec", Fields(&[("ports", Keyed("port", &[]))])),
];

const SERVICE_ACCOUNT: &[(&str, Shape)] = &[
    ("metadata", Fields(OBJECT_META)),
    ("secrets", Keyed("name", &[])),
];

const ANY_OBJECT: &[(&str, Shape)] = &[("metadata", Fields(OBJECT_META))];

/// The shape of an object of `kind` (compared ignoring case, as EMCO's
/// examples spell kinds either way).
fn object_shape(kind: &str) -> &'static [(&'static str, Shape)] {
    match kind.to_ascii_lowercase().as_str() {
        "pod" => POD,
        "deployment"
        | "statefulset"
        | "daemonset"
        | "replicaset"
        | "replicationcontroller"
        | "job" => WORKLOAD,
        "cronjob" => CRON_JOB,
        "podtemplate" => POD_TEMPLATE_KIND,
        "service" => SERVICE,
        "serviceaccount" => SERVICE_ACCOUNT,
        _ => ANY_OBJECT,
    }
}

/// Applies the strategic merge patch `patch` to `object`, an object of `kind`.
pub fn apply(object: &mut Value, patch: &Value, kind: &str) -> Result<(), String> {
    let Value::Object(patch) = patch else {
        return Err("a strategic merge patch is a map".into());
    };
    let original = match object.take() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    match merge_map(original, patch, object_shape(kind))? {
        Some(merged) => {
            *object = Value::Object(merged);
            Ok(())
        }
        None => Err("the patch deletes the whole object ($patch: delete)".into()),
    }
}

/// `original` merged with `patch`; `None` when the patch deletes the map.
fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    fields: &'static [(&'static str, Shape)],
) -> Result<Option<Map<String, Value>>, String> {
    match patch.get("$patch").map(Value::as_str) {
        None | Some(Some("merge")) => {}
        Some(Some("replace")) => return Ok(Some(without_directives(patch))),
        Some(Some("delete")) => return Ok(None),
        Some(other) => return Err(format!("unknown $patch directive {other:?}")),
    }
    if let Some(retained) = patch.get("$retainKeys") {
        let Value::Array(retained) = retained else {
            return Err("$retainKeys is a list of field names".into());
        };
        original.retain(|key, _| retained.iter().any(|kept| kept.as_str() == Some(key)));
    }
    for (key, value) in patch {
        if key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(list) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Value::Array(doomed)) =
                (original.get_mut(list), value)
            {
                items.retain(|item| !doomed.contains(item));
            }
            continue;
        }
        if value.is_null() {
            original.remove(key);
            continue;
        }
        let shape = fields
            .iter()
            .find(|(name, _)| name == key)
            .map_or(Shape::Plain, |&(_, shape)| shape);
        let current = original.remove(key);
        let merged = match (current, value, shape) {
            (current, Value::Object(patch), _) => {
                let current = match current {
                    Some(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                let inner = match shape {
                    Fields(inner) => inner,
                    _ => &[],
                };
                merge_map(current, patch, inner)?.map(Value::Object)
            }
            (current, Value::Array(patch), Keyed(merge_key, item)) => {
                let current = match current {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                Some(Value::Array(
                    merge_keyed(current, patch, merge_key, item)
                        .map_err(|reason| format!("{key}: {reason}"))?,
                ))
            }
            (Some(Value::Array(mut items)), Value::Array(patch), Set) => {
                for item in patch {
                    if !items.contains(item) {
                        items.push(item.clone());
                    }
                }
                Some(Value::Array(items))
            }
            (_, value, _) => Some(without_directives_in(value)),
        };
        if let Some(merged) = merged {
            original.insert(key.clone(), merged);
        }
    }
    Ok(Some(original))
}

/// A list of maps merged item by item on `merge_key`: a patch item replaces
/// nothing, it merges into the item with the same key, or is appended.
fn merge_keyed(
    mut items: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    fields: &'static [(&'static str, Shape)],
) -> Result<Vec<Value>, String> {
    let directive = |item: &Value| {
        item.get("$patch")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if patch
        .iter()
        .any(|item| directive(item).as_deref() == Some("replace"))
    {
        return Ok(patch
            .iter()
            .filter(|item| directive(item).as_deref() != Some("replace"))
            .map(without_directives_in)
            .collect());
    }
    for item in patch {
        let Value::Object(patch_item) = item else {
            return Err(format!(
                "the list merges on {merge_key:?}, so its items are maps"
            ));
        };
        let key = patch_item
            .get(merge_key)
            .ok_or_else(|| format!("an item has no merge key {merge_key:?}"))?;
        let position = items
            .iter()
            .position(|existing| existing.get(merge_key) == Some(key));
        if directive(item).as_deref() == Some("delete") {
            items.retain(|existing| existing.get(merge_key) != Some(key));
            continue;
        }
        match position {
            Some(position) => {
                let current = match items[position].take() {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                match merge_map(current, patch_item, fields)? {
                    Some(merged) => items[position] = Value::Object(merged),
                    None => {
                        items.remove(position);
                    }
                }
            }
            None => {
                if let Some(added) = merge_map(Map::new(), patch_item, fields)? {
                    items.push(Value::Object(added));
                }
            }
        }
    }
    Ok(items)
}

fn is_directive(key: &str) -> bool {
    key == "$patch"
        || key == "$retainKeys"
        || key.starts_with("$setElementOrder/")
        || key.starts_with("$deleteFromPrimitiveList/")
}

fn without_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(key, _)| !is_directive(key))
        .map(|(key, value)| (key.clone(), without_directives_in(value)))
        .collect()
}

fn without_directives_in(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(without_directives(map)),
        Value::Array(items) => Value::Array(items.iter().map(without_directives_in).collect()),
        other => other.clone(),
    }
}
