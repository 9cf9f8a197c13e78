//! A context as it is stored: what it was made from, and per app the
//! manifests every cluster gets and what differs on some.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use wasmco_core::hooks::Hook;
use wasmco_core::resource::{ClusterRef, Resource, ResourceKey};
use wasmco_core::wire::AppDependency;

/// A revision's progressive rollout: its intent, and the groups of
/// clusters it goes to, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPlan {
    /// The rollout intent as it was when the revision was built.
    pub intent: wasmco_core::specs::RolloutIntentSpec,
    /// The groups.
    pub groups: Vec<Vec<ClusterRef>>,
}

/// What a context was made from, and in what order rsync deploys it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextMeta {
    /// Project.
    pub project: String,
    /// Composite app.
    pub composite_app: String,
    /// Composite app version.
    pub composite_app_version: String,
    /// Deployment intent group.
    pub deployment_intent_group: String,
    /// The DIG's `spec.version` (EMCO's release).
    pub release: String,
    /// This context's revision.
    pub revision: u64,
    /// When it was made.
    pub created: String,
    /// Apps in deployment order (dependencies first).
    pub app_order: Vec<String>,
    /// Per app, the apps it waits for.
    pub dependencies: BTreeMap<String, Vec<AppDependency>>,
    /// As whom, and into which namespace, its objects are applied.
    #[serde(default)]
    pub access: Access,
    /// The DIG (its key) whose objects this context takes over: EMCO's
    /// migrate, from one composite app version to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopt_from: Option<String>,
    /// Per cluster provider, the tenancy rules its objects were checked
    /// against, which rsync holds them to again where it learns a kind's
    /// real scope; absent for what the admin deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<BTreeMap<String, wasmco_core::tenancy::Confinement>>,
    /// Services of its apps to make known on the clusters of other apps
    /// once they are deployed (EMCO's dtc service discovery).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_mirrors: Vec<ServiceMirror>,
    /// The DIG's failover intent when this revision was built: rsync
    /// removes what a move leaves on a cluster that answers only once
    /// the new copies are Ready, and the failover watch reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<wasmco_core::specs::FailoverIntentSpec>,
    /// Its progressive rollout's intent and groups, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutPlan>,
}

/// A server app's Service, made known to client apps on other clusters:
/// once the server is ready, each client cluster gets a Service of that
/// name without a selector and its Endpoints, pointing at the address the
/// server's clusters expose it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMirror {
    /// Where it was asked for, for messages (an inbound intent, say).
    pub origin: String,
    /// The app whose Service it is.
    pub server_app: String,
    /// The Service's name.
    pub service: String,
    /// The apps whose clusters get it.
    pub client_apps: Vec<String>,
}

/// How rsync reaches the clusters for one context: with their own
/// kubeconfigs, or (a DIG in a standard logical cloud) with that cloud's
/// user's, and the namespace objects that name none go into.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// The namespace of objects that name none; empty means `default`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The standard logical cloud (of the context's project) whose user's
    /// kubeconfig on each cluster is used instead of the cluster's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_user: Option<String>,
}

impl Access {
    /// The namespace of objects that name none.
    pub fn namespace(&self) -> &str {
        if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }
}

/// One cluster of an app in a stored context. Stored as the cluster's
/// `provider+cluster` alone when it came from no anyOf group, as most do
/// (an app on 100,000 clusters is then a list of short strings), else as
/// `{"cluster", "group"}`; contexts stored before read back as they were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPlacement {
    /// The cluster (stored as EMCO's `provider+cluster`).
    pub cluster: ClusterRef,
    /// The anyOf group it came from.
    pub group: Option<String>,
}

/// A placement with its group, as stored.
#[derive(Serialize, Deserialize)]
struct GroupedPlacement<'a> {
    cluster: Cow<'a, ClusterRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group: Option<Cow<'a, str>>,
}

impl Serialize for StoredPlacement {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.group {
            None => self.cluster.serialize(serializer),
            Some(group) => GroupedPlacement {
                cluster: Cow::Borrowed(&self.cluster),
                group: Some(Cow::Borrowed(group)),
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for StoredPlacement {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = StoredPlacement;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("provider+cluster, or an object of cluster and group")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<StoredPlacement, E> {
                let cluster = ClusterRef::parse(key)
                    .ok_or_else(|| E::custom(format!("{key:?} is not provider+cluster")))?;
                Ok(StoredPlacement {
                    cluster,
                    group: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<StoredPlacement, A::Error> {
                let grouped = GroupedPlacement::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(StoredPlacement {
                    cluster: grouped.cluster.into_owned(),
                    group: grouped.group.map(Cow::into_owned),
                })
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// How a cluster's resource differs from its app's base, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum StoredOverride {
    Set(serde_json::Value),
    Removed,
}

/// An app of a stored context.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredApp {
    /// Its name.
    pub name: String,
    /// The manifests every cluster gets, CRDs first.
    pub base: Vec<Resource>,
    /// Its clusters.
    pub placement: Vec<StoredPlacement>,
    /// Per cluster, the resources that differ from `base`.
    pub diffs: BTreeMap<ClusterRef, Vec<(ResourceKey, Option<Resource>)>>,
    /// Its Helm hooks, by weight: every cluster of the app runs them.
    pub hooks: Vec<Hook>,
}

impl StoredApp {
    /// An app of nothing but `per_cluster`: placed on each of those
    /// clusters with those resources. What every cluster gets alike is
    /// kept once, as the base; a cluster keeps only the rest.
    pub fn spread(name: &str, per_cluster: Vec<(ClusterRef, Vec<Resource>)>) -> Self {
        let placement = per_cluster
            .iter()
            .map(|(cluster, _)| StoredPlacement {
                cluster: cluster.clone(),
                group: None,
            })
            .collect();
        let base: Vec<Resource> = match per_cluster.split_first() {
            Some(((_, first), others)) => first
                .iter()
                .filter(|r| others.iter().all(|(_, theirs)| theirs.contains(r)))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        let diffs = per_cluster
            .into_iter()
            .filter_map(|(cluster, resources)| {
                let diff: Vec<_> = resources
                    .into_iter()
                    .filter(|r| !base.contains(r))
                    .map(|r| (r.key.clone(), Some(r)))
                    .collect();
                (!diff.is_empty()).then_some((cluster, diff))
            })
            .collect();
        StoredApp {
            name: name.to_owned(),
            base,
            placement,
            diffs,
            hooks: Vec::new(),
        }
    }

    /// The manifests `cluster` gets.
    pub fn resources_on(&self, cluster: &ClusterRef) -> Vec<&Resource> {
        let Some(diff) = self.diffs.get(cluster) else {
            return self.base.iter().collect();
        };
        let lookup = |key: &ResourceKey| diff.iter().find(|(k, _)| k == key).map(|(_, r)| r);
        let mut out: Vec<&Resource> = self
            .base
            .iter()
            .filter_map(|base| match lookup(&base.key) {
                None => Some(base),
                Some(changed) => changed.as_ref(),
            })
            .collect();
        out.extend(diff.iter().filter_map(|(key, r)| match r {
            Some(added) if !self.base.iter().any(|b| &b.key == key) => Some(added),
            _ => None,
        }));
        out
    }
}

/// A whole stored context.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredContext {
    /// Its inputs and order.
    pub meta: ContextMeta,
    /// Its apps in app order.
    pub apps: Vec<StoredApp>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_placement_is_stored_as_its_cluster_unless_it_has_a_group() {
        let plain = StoredPlacement {
            cluster: ClusterRef::new("p", "a"),
            group: None,
        };
        let grouped = StoredPlacement {
            cluster: ClusterRef::new("p", "b"),
            group: Some("g".into()),
        };
        let stored = serde_json::to_value([&plain, &grouped]).unwrap();
        assert_eq!(stored, json!(["p+a", {"cluster": "p+b", "group": "g"}]));
        let back: Vec<StoredPlacement> = serde_json::from_value(stored).unwrap();
        assert_eq!(back, [plain.clone(), grouped]);
        // As contexts stored before the short form have it.
        let earlier: StoredPlacement = serde_json::from_value(json!({"cluster": "p+a"})).unwrap();
        assert_eq!(earlier, plain);
        for bad in [json!("no-plus"), json!({"group": "g"}), json!(7)] {
            assert!(serde_json::from_value::<StoredPlacement>(bad).is_err());
        }
    }
}
