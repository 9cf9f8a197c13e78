//! Server-side apply's field ownership, as far as its users can tell: each
//! field manager owns the fields it applied or changed; an apply that would
//! change a field another manager owns is a conflict unless forced; and a
//! field a manager stops applying is removed when no one else owns it.
//!
//! Fields are the leaves of an object's maps. Lists count as one field, as
//! for the API server's atomic lists (it merges some lists by key; rsync
//! and kubectl apply whole objects, where the two agree).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A field: its path of map keys.
pub type FieldPath = Vec<String>;

/// Who owns which fields of one object.
#[derive(Debug, Clone, Default)]
pub struct FieldOwners {
    by_manager: BTreeMap<String, BTreeSet<FieldPath>>,
}

/// Fields the server sets or that name the object: nobody owns them.
fn server_field(path: &[String]) -> bool {
    match path {
        [top] => top == "apiVersion" || top == "kind",
        [top, ..] if top == "status" => true,
        [meta, field, ..] if meta == "metadata" => matches!(
            field.as_str(),
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "managedFields"
                | "deletionTimestamp"
        ),
        _ => false,
    }
}

/// The fields `object` sets, with their values.
pub fn fields(object: &Value) -> BTreeMap<FieldPath, &Value> {
    fn walk<'a>(value: &'a Value, path: &mut FieldPath, out: &mut BTreeMap<FieldPath, &'a Value>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    path.push(key.clone());
                    walk(child, path, out);
                    path.pop();
                }
            }
            _ if path.is_empty() || server_field(path) => {}
            leaf => {
                out.insert(path.clone(), leaf);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(object, &mut Vec::new(), &mut out);
    out
}

fn at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |value, key| value.get(key))
}

/// `.data.a`, as the API server names a field in a conflict.
fn dotted(path: &[String]) -> String {
    path.iter().map(|key| format!(".{key}")).collect()
}

impl FieldOwners {
    /// The conflicts an apply of `applied` by `manager` onto `current`
    /// would have: fields it changes that another manager owns, as the API
    /// server words them; empty when there are none.
    pub fn conflicts(&self, manager: &str, applied: &Value, current: &Value) -> Vec<String> {
        let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (path, value) in fields(applied) {
            if at(current, &path) == Some(value) {
                continue;
            }
            for (owner, owned) in &self.by_manager {
                if owner != manager && owned.contains(&path) {
                    found.entry(owner).or_default().push(dotted(&path));
                }
            }
        }
        found
            .into_iter()
            .flat_map(|(owner, paths)| {
                paths
                    .into_iter()
                    .map(move |path| format!("conflict with \"{owner}\": {path}"))
            })
            .collect()
    }

    /// The merge patch that applies `applied` for `manager`: `applied`,
    /// plus a removal of each field `manager` applied before, dropped now,
    /// and no one else owns.
    pub fn apply_patch(&self, manager: &str, applied: &Value) -> Value {
        let mut patch = applied.clone();
        let now = fields(applied);
        let Some(before) = self.by_manager.get(manager) else {
            return patch;
        };
        for path in before {
            let shared = self
                .by_manager
                .iter()
                .any(|(owner, owned)| owner != manager && owned.contains(path));
            if now.contains_key(path) || shared {
                continue;
            }
            let Some((last, parents)) = path.split_last() else {
                continue;
            };
            // Where `applied` has something other than a map on the way,
            // the merge replaces the whole branch anyway.
            let mut node = Some(&mut patch);
            for key in parents {
                node = node.and_then(Value::as_object_mut).map(|map| {
                    map.entry(key.clone())
                        .or_insert_with(|| Value::Object(Map::new()))
                });
            }
            if let Some(map) = node.and_then(Value::as_object_mut) {
                map.insert(last.clone(), Value::Null);
            }
        }
        patch
    }

    /// `manager` applied `applied` onto `before`: it owns exactly those
    /// fields now; the others lose the ones whose value it changed.
    pub fn applied(&mut self, manager: &str, applied: &Value, before: Option<&Value>) {
        let now = fields(applied);
        for (owner, owned) in &mut self.by_manager {
            if owner != manager {
                owned.retain(|path| {
                    now.get(path)
                        .is_none_or(|value| before.and_then(|b| at(b, path)) == Some(*value))
                });
            }
        }
        self.by_manager
            .insert(manager.to_owned(), now.into_keys().collect());
        self.by_manager.retain(|_, owned| !owned.is_empty());
    }

    /// `manager` changed `before` into `after` by a create, replace or
    /// patch: it takes every field that changed.
    pub fn updated(&mut self, manager: &str, before: Option<&Value>, after: &Value) {
        let old = before.map(fields).unwrap_or_default();
        let new = fields(after);
        let changed: BTreeSet<FieldPath> = new
            .iter()
            .filter(|(path, value)| old.get(*path) != Some(*value))
            .map(|(path, _)| path.clone())
            .chain(old.keys().filter(|path| !new.contains_key(*path)).cloned())
            .collect();
        if changed.is_empty() {
            return;
        }
        for owned in self.by_manager.values_mut() {
            owned.retain(|path| !changed.contains(path));
        }
        self.by_manager
            .entry(manager.to_owned())
            .or_default()
            .extend(changed.into_iter().filter(|path| new.contains_key(path)));
        self.by_manager.retain(|_, owned| !owned.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "labels": {"app": "a"}}, "data": data})
    }

    #[test]
    fn another_managers_field_conflicts_unless_the_value_is_the_same() {
        let mut owners = FieldOwners::default();
        let first = config(json!({"a": "1"}));
        owners.applied("one", &first, None);
        assert!(owners.conflicts("two", &first, &first).is_empty());
        let changed = config(json!({"a": "2"}));
        assert_eq!(
            owners.conflicts("two", &changed, &first),
            ["conflict with \"one\": .data.a"]
        );
        assert!(owners.conflicts("one", &changed, &first).is_empty());
    }

    #[test]
    fn a_dropped_field_is_removed_unless_someone_else_owns_it() {
        let mut owners = FieldOwners::default();
        let both = config(json!({"a": "1", "b": "2"}));
        owners.applied("one", &both, None);
        let patch = owners.apply_patch("one", &config(json!({"a": "1"})));
        assert_eq!(patch["data"]["b"], Value::Null);
        assert!(patch["data"].as_object().unwrap().contains_key("b"));

        owners.updated(
            "kubectl-edit",
            Some(&both),
            &config(json!({"a": "1", "b": "3"})),
        );
        let patch = owners.apply_patch("one", &config(json!({"a": "1"})));
        assert!(!patch["data"].as_object().unwrap().contains_key("b"));
    }

    #[test]
    fn an_edit_takes_the_fields_it_changed() {
        let mut owners = FieldOwners::default();
        let applied = config(json!({"a": "1"}));
        owners.applied("wasmco", &applied, None);
        let edited = config(json!({"a": "9"}));
        owners.updated("kubectl-edit", Some(&applied), &edited);
        assert_eq!(
            owners.conflicts("wasmco", &applied, &edited),
            ["conflict with \"kubectl-edit\": .data.a"]
        );
        // Forced: the applier takes it back.
        owners.applied("wasmco", &applied, Some(&edited));
        assert!(owners.conflicts("wasmco", &applied, &applied).is_empty());
    }
}
