//! A DIG's footprint: every cluster and kind its revisions put objects on,
//! where rsync looks for what it has to remove. Kept grouped by the set of
//! kinds, since a DIG's clusters mostly get the same ones: 100,000 clusters
//! are then one list of names, not 100,000 sets of kinds.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fixedbitset::FixedBitSet;
use serde::{Deserialize, Serialize};
use wasmco_core::resource::{ClusterRef, Resource};

use super::model::StoredApp;

/// A kind of object: its `apiVersion` and `kind`.
type Kind = (String, String);

/// Clusters given objects of the same kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct FootprintGroup {
    kinds: BTreeSet<Kind>,
    clusters: Vec<ClusterRef>,
}

/// Every cluster a DIG's revisions put objects on, and of which kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footprint {
    groups: Vec<FootprintGroup>,
}

impl Footprint {
    /// Reads a stored footprint, grouped or (as DIGs deployed before the
    /// groups were stored) a map of each cluster to its kinds.
    pub fn from_stored(bytes: &[u8]) -> Result<Footprint, serde_json::Error> {
        serde_json::from_slice(bytes).or_else(|grouped_error| {
            let per_cluster: BTreeMap<ClusterRef, BTreeSet<Kind>> =
                serde_json::from_slice(bytes).map_err(|_| grouped_error)?;
            let mut footprint = Footprint::default();
            for (cluster, kinds) in per_cluster {
                footprint.groups.push(FootprintGroup {
                    kinds,
                    clusters: vec![cluster],
                });
            }
            Ok(footprint.with(&[]))
        })
    }

    /// Each cluster with the kinds it was given.
    pub fn clusters(&self) -> impl Iterator<Item = (&ClusterRef, &BTreeSet<(String, String)>)> {
        self.groups
            .iter()
            .flat_map(|group| group.clusters.iter().map(move |c| (c, &group.kinds)))
    }

    /// This footprint and what `apps` put where, regrouped. It works on
    /// borrowed names and a bit per kind: each app's base kinds are worked
    /// out once, and only a cluster the app differs on is looked at
    /// resource by resource.
    pub fn with(&self, apps: &[StoredApp]) -> Footprint {
        let mut table: BTreeSet<(&str, &str)> = BTreeSet::new();
        for group in &self.groups {
            table.extend(group.kinds.iter().map(|(v, k)| (v.as_str(), k.as_str())));
        }
        for app in apps {
            table.extend(app.base.iter().map(kind_of));
            let changed = app.diffs.values().flatten().filter_map(|(_, r)| r.as_ref());
            table.extend(changed.map(kind_of));
        }
        let table: Vec<(&str, &str)> = table.into_iter().collect();
        let mut kinds_on = ClusterKinds::default();
        for group in &self.groups {
            let kinds = mask(
                &table,
                group.kinds.iter().map(|(v, k)| (v.as_str(), k.as_str())),
            );
            for cluster in &group.clusters {
                kinds_on.add(cluster, &kinds);
            }
        }
        for app in apps {
            let base = mask(&table, app.base.iter().map(kind_of));
            for placement in &app.placement {
                let cluster = &placement.cluster;
                if app.diffs.contains_key(cluster) {
                    let on = app.resources_on(cluster);
                    kinds_on.add(cluster, &mask(&table, on.into_iter().map(kind_of)));
                } else {
                    kinds_on.add(cluster, &base);
                }
            }
        }
        kinds_on.grouped(&table)
    }
}

fn kind_of(resource: &Resource) -> (&str, &str) {
    (&resource.api_version, &resource.key.kind)
}

/// The bits of `kinds` in `table` (sorted).
fn mask<'k>(
    table: &[(&str, &str)],
    kinds: impl IntoIterator<Item = (&'k str, &'k str)>,
) -> FixedBitSet {
    let mut mask = FixedBitSet::with_capacity(table.len());
    for kind in kinds {
        if let Ok(bit) = table.binary_search(&kind) {
            mask.insert(bit);
        }
    }
    mask
}

/// Per cluster, in the order first seen, the bits of its kinds.
#[derive(Default)]
struct ClusterKinds<'a> {
    slots: Vec<(&'a ClusterRef, FixedBitSet)>,
    slot_of: HashMap<&'a ClusterRef, usize>,
}

impl<'a> ClusterKinds<'a> {
    /// Adds `kinds` to `cluster`'s. A cluster given no kinds is kept too:
    /// rsync's clean-up there is what runs an app's delete hooks (a chart
    /// of hooks alone, or an app whose every object an action removed).
    fn add(&mut self, cluster: &'a ClusterRef, kinds: &FixedBitSet) {
        let slot = *self.slot_of.entry(cluster).or_insert_with(|| {
            self.slots
                .push((cluster, FixedBitSet::with_capacity(kinds.len())));
            self.slots.len() - 1
        });
        self.slots[slot].1.union_with(kinds);
    }

    /// The clusters grouped by their kinds, groups in the order of their
    /// kinds' bits.
    fn grouped(self, table: &[(&str, &str)]) -> Footprint {
        let mut by_kinds: BTreeMap<FixedBitSet, Vec<ClusterRef>> = BTreeMap::new();
        for (cluster, kinds) in self.slots {
            by_kinds.entry(kinds).or_default().push(cluster.clone());
        }
        let groups = by_kinds
            .into_iter()
            .map(|(kinds, clusters)| FootprintGroup {
                kinds: kinds
                    .ones()
                    .map(|bit| (table[bit].0.to_owned(), table[bit].1.to_owned()))
                    .collect(),
                clusters,
            })
            .collect();
        Footprint { groups }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::appcontext::StoredPlacement;

    fn resource(api_version: &str, kind: &str, name: &str) -> Resource {
        Resource::from_manifest(json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name}}))
        .unwrap()
    }

    fn cluster(name: &str) -> ClusterRef {
        ClusterRef::new("p", name)
    }

    fn app(base: Vec<Resource>, on: &[&str]) -> StoredApp {
        StoredApp {
            name: "app".into(),
            base,
            placement: on
                .iter()
                .map(|c| StoredPlacement {
                    cluster: cluster(c),
                    group: None,
                })
                .collect(),
            diffs: BTreeMap::new(),
            hooks: Vec::new(),
        }
    }

    fn kinds_of(footprint: &Footprint) -> BTreeMap<String, Vec<String>> {
        footprint
            .clusters()
            .map(|(c, kinds)| (c.to_string(), kinds.iter().map(|k| k.1.clone()).collect()))
            .collect()
    }

    #[test]
    fn clusters_given_the_same_kinds_share_a_group_and_a_difference_splits_one_off() {
        let deployment = resource("apps/v1", "Deployment", "web");
        let mut web = app(
            vec![deployment.clone(), resource("v1", "Service", "web")],
            &["a", "b", "c"],
        );
        // On c the Service is gone and a ConfigMap added.
        web.diffs.insert(
            cluster("c"),
            vec![
                (resource("v1", "Service", "web").key, None),
                (
                    resource("v1", "ConfigMap", "cfg").key,
                    Some(resource("v1", "ConfigMap", "cfg")),
                ),
            ],
        );
        let footprint = Footprint::default().with(&[web]);
        assert_eq!(footprint.groups.len(), 2);
        let kinds = kinds_of(&footprint);
        assert_eq!(kinds["p+a"], ["Deployment", "Service"]);
        assert_eq!(kinds["p+b"], ["Deployment", "Service"]);
        assert_eq!(kinds["p+c"], ["Deployment", "ConfigMap"]);

        // A later revision on d with a Job: what c and a had stays.
        let later = Footprint::from_stored(&serde_json::to_vec(&footprint).unwrap())
            .unwrap()
            .with(&[app(vec![resource("batch/v1", "Job", "once")], &["a", "d"])]);
        let kinds = kinds_of(&later);
        assert_eq!(kinds["p+a"], ["Deployment", "Job", "Service"]);
        assert_eq!(kinds["p+c"], ["Deployment", "ConfigMap"]);
        assert_eq!(kinds["p+d"], ["Job"]);
        assert_eq!(later.clusters().count(), 4);
    }

    #[test]
    fn a_cluster_given_no_objects_stays_in_the_footprint() {
        let hooks_only = app(Vec::new(), &["a"]);
        let footprint = Footprint::default().with(&[hooks_only]);
        let kinds = kinds_of(&footprint);
        assert_eq!(kinds["p+a"], Vec::<String>::new());
        let stored = json!({"p+a": [], "p+b": [["v1", "ConfigMap"]]});
        let read = Footprint::from_stored(&serde_json::to_vec(&stored).unwrap()).unwrap();
        assert_eq!(read.clusters().count(), 2);
    }

    #[test]
    fn a_footprint_stored_per_cluster_reads_back_grouped() {
        let stored = json!({
            "p+a": [["apps/v1", "Deployment"], ["v1", "Service"]],
            "p+b": [["apps/v1", "Deployment"], ["v1", "Service"]],
            "p+c": [["v1", "ConfigMap"]],
        });
        let footprint = Footprint::from_stored(&serde_json::to_vec(&stored).unwrap()).unwrap();
        assert_eq!(footprint.groups.len(), 2);
        let kinds = kinds_of(&footprint);
        assert_eq!(kinds["p+b"], ["Deployment", "Service"]);
        assert_eq!(kinds["p+c"], ["ConfigMap"]);
        assert!(Footprint::from_stored(br#"{"p-without-plus": []}"#).is_err());
    }
}
