//! An app's resources on each of its clusters, as this call's edits leave them.
//!
//! The request gives an app's resources as a base list plus whole lists for
//! the clusters that differ. The controller reads a resource only when it
//! touches it, and then keeps it as *versions*: the distinct values it has
//! across the app's clusters, each cluster pointing at one. Clusters that
//! share a value are patched once, so a thousand clusters with the same
//! Deployment cost one patch, and the edits come out grouped by value.

use std::collections::HashMap;

use serde_json::Value;

use crate::bindings::wasmco::controller::types::Resource;

/// A resource of an app: its kind and `metadata.name`.
pub type Key = (String, String);

/// One app of the request.
pub struct AppState<'r> {
    /// The clusters it is placed on (indices into the request's clusters);
    /// a *position* below is an index into this list.
    pub placed: Vec<u32>,
    base: &'r [Resource],
    differing: HashMap<u32, &'r [Resource]>,
    tracked: HashMap<Key, Tracked>,
}

/// The values of one resource across the app's clusters.
pub struct Tracked {
    /// The distinct values; `None`: the resource is not there.
    versions: Vec<Option<Value>>,
    /// Per position, its index into `versions`.
    version_of: Vec<usize>,
    /// Per version, how many positions hold it.
    holders: Vec<usize>,
    /// Whether the app's base list (what every cluster gets unless it
    /// differs) holds the resource.
    pub in_base: bool,
}

impl<'r> AppState<'r> {
    /// An app placed on `placed`, with the request's resources of it.
    pub fn new(
        placed: Vec<u32>,
        base: &'r [Resource],
        differing: impl IntoIterator<Item = (u32, &'r [Resource])>,
    ) -> Self {
        AppState {
            placed,
            base,
            differing: differing.into_iter().collect(),
            tracked: HashMap::new(),
        }
    }

    /// The kind under which the app holds an object `kind`/`name` on some
    /// cluster: `kind` itself, or failing that the kind spelled otherwise
    /// (EMCO's examples write `networkpolicy` for `NetworkPolicy`).
    pub fn find_kind(&self, kind: &str, name: &str) -> Option<String> {
        let mut candidates = self
            .base
            .iter()
            .chain(self.differing.values().flat_map(|list| list.iter()))
            .filter(|resource| resource.name == name)
            .map(|resource| resource.kind.as_str())
            .chain(
                self.tracked
                    .iter()
                    .filter(|((_, tracked_name), tracked)| {
                        tracked_name == name && tracked.versions.iter().any(Option::is_some)
                    })
                    .map(|((tracked_kind, _), _)| tracked_kind.as_str()),
            );
        let mut fallback = None;
        for candidate in &mut candidates {
            if candidate == kind {
                return Some(candidate.to_owned());
            }
            if fallback.is_none() && candidate.eq_ignore_ascii_case(kind) {
                fallback = Some(candidate.to_owned());
            }
        }
        fallback
    }

    /// The values of `key` across the app's clusters, read from the
    /// request the first time.
    pub fn track(&mut self, key: &Key) -> Result<&mut Tracked, String> {
        if !self.tracked.contains_key(key) {
            let tracked = self.read(key)?;
            self.tracked.insert(key.clone(), tracked);
        }
        self.tracked
            .get_mut(key)
            .ok_or_else(|| "internal: a tracked resource vanished".to_owned())
    }

    fn read(&self, key: &Key) -> Result<Tracked, String> {
        let find = |list: &'r [Resource]| {
            list.iter()
                .find(|resource| resource.kind == key.0 && resource.name == key.1)
                .map(|resource| resource.manifest.as_str())
        };
        let parse = |text: Option<&str>| -> Result<Option<Value>, String> {
            text.map(|text| {
                serde_json::from_str(text)
                    .map_err(|e| format!("the manifest of {}+{} is not JSON: {e}", key.1, key.0))
            })
            .transpose()
        };
        let base_text = find(self.base);
        if self.differing.is_empty() {
            // Every cluster has the base list: one version, held everywhere.
            return Ok(Tracked {
                versions: vec![parse(base_text)?],
                version_of: vec![0; self.placed.len()],
                holders: vec![self.placed.len()],
                in_base: base_text.is_some(),
            });
        }
        let mut versions = vec![parse(base_text)?];
        let mut known: HashMap<Option<&str>, usize> = HashMap::from([(base_text, 0)]);
        let mut version_of = Vec::with_capacity(self.placed.len());
        for cluster in &self.placed {
            let version = match self.differing.get(cluster) {
                None => 0,
                Some(list) => {
                    let text = find(list);
                    match known.get(&text) {
                        Some(&version) => version,
                        None => {
                            versions.push(parse(text)?);
                            known.insert(text, versions.len() - 1);
                            versions.len() - 1
                        }
                    }
                }
            };
            version_of.push(version);
        }
        let mut holders = vec![0; versions.len()];
        for &version in &version_of {
            holders[version] += 1;
        }
        Ok(Tracked {
            versions,
            version_of,
            holders,
            in_base: base_text.is_some(),
        })
    }
}

impl Tracked {
    /// The value at version `version`.
    pub fn value(&self, version: usize) -> Option<&Value> {
        self.versions.get(version).and_then(Option::as_ref)
    }

    /// The value at `position`.
    pub fn at(&self, position: usize) -> Option<&Value> {
        self.version_of
            .get(position)
            .and_then(|&version| self.value(version))
    }

    /// The positions where the resource is there, in order.
    pub fn present(&self) -> Vec<usize> {
        (0..self.version_of.len())
            .filter(|&position| self.at(position).is_some())
            .collect()
    }

    /// `positions` grouped by the version they hold, in order of first
    /// appearance.
    pub fn groups(&self, positions: &[usize]) -> Vec<(usize, Vec<usize>)> {
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        // Versions are numbered from 0: a slot per version, no hashing.
        let mut group_of: Vec<Option<usize>> = vec![None; self.versions.len()];
        for &position in positions {
            let version = self.version_of[position];
            match group_of[version] {
                Some(group) => groups[group].1.push(position),
                None => {
                    group_of[version] = Some(groups.len());
                    groups.push((version, vec![position]));
                }
            }
        }
        groups
    }

    /// Gives `positions`, which all hold `version`, the value `value`: in
    /// place when no other position holds that version.
    pub fn set(&mut self, version: usize, positions: &[usize], value: Option<Value>) {
        if self.holders[version] == positions.len() {
            self.versions[version] = value;
        } else {
            self.versions.push(value);
            self.holders.push(positions.len());
            self.holders[version] -= positions.len();
            let new_version = self.versions.len() - 1;
            for &position in positions {
                self.version_of[position] = new_version;
            }
        }
    }
}
