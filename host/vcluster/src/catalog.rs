//! The resource types a virtual cluster serves: the built-in ones rsync
//! deploys, plus those its CustomResourceDefinitions add.

use serde_json::{Value, json};

/// One served resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Singular resource name, e.g. `deployment`.
    pub singular: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Groupings kubectl expands, e.g. `all` for `kubectl get all`.
    pub categories: Vec<String>,
}

impl ResourceType {
    /// `apiVersion` of its objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Its entry in an APIResourceList.
    pub fn discovery(&self) -> Value {
        let mut entry = json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        });
        if let Some((_, short)) = SHORT_NAMES
            .iter()
            .find(|(kind, _)| self.group_is_built_in() && *kind == self.kind)
        {
            entry["shortNames"] = json!([short]);
        }
        if !self.categories.is_empty() {
            entry["categories"] = json!(self.categories);
        }
        entry
    }

    fn group_is_built_in(&self) -> bool {
        BUILT_IN.iter().any(|(group, ..)| *group == self.group)
    }
}

/// The short names kubectl knows the built-in kinds by.
const SHORT_NAMES: &[(&str, &str)] = &[
    ("Namespace", "ns"),
    ("ConfigMap", "cm"),
    ("Service", "svc"),
    ("ServiceAccount", "sa"),
    ("Pod", "po"),
    ("PersistentVolumeClaim", "pvc"),
    ("ResourceQuota", "quota"),
    ("Deployment", "deploy"),
    ("StatefulSet", "sts"),
    ("DaemonSet", "ds"),
    ("ReplicaSet", "rs"),
    ("CronJob", "cj"),
    ("NetworkPolicy", "netpol"),
    ("Ingress", "ing"),
    ("CertificateSigningRequest", "csr"),
    ("Node", "no"),
    ("Endpoints", "ep"),
    ("ReplicationController", "rc"),
    ("HorizontalPodAutoscaler", "hpa"),
    ("CustomResourceDefinition", "crd"),
];

/// The built-in kinds the API server puts in the `all` category: what
/// `kubectl get all` lists.
const IN_ALL: &[&str] = &[
    "Pod",
    "Service",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "HorizontalPodAutoscaler",
];

const BUILT_IN: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "namespaces", "Namespace", false),
    ("", "v1", "nodes", "Node", false),
    ("", "v1", "endpoints", "Endpoints", true),
    (
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
    ),
    ("", "v1", "configmaps", "ConfigMap", true),
    ("", "v1", "secrets", "Secret", true),
    ("", "v1", "services", "Service", true),
    ("", "v1", "serviceaccounts", "ServiceAccount", true),
    ("", "v1", "pods", "Pod", true),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
    ),
    ("", "v1", "resourcequotas", "ResourceQuota", true),
    ("apps", "v1", "deployments", "Deployment", true),
    ("apps", "v1", "statefulsets", "StatefulSet", true),
    ("apps", "v1", "daemonsets", "DaemonSet", true),
    ("apps", "v1", "replicasets", "ReplicaSet", true),
    ("batch", "v1", "jobs", "Job", true),
    ("batch", "v1", "cronjobs", "CronJob", true),
    (
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
    ),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
    ),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", true),
    (
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
    ),
    // Charts such as kube-prometheus-stack install their own webhooks; the
    // virtual cluster stores them but never calls them.
    (
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
    ),
];

/// The built-in types.
pub fn built_in() -> Vec<ResourceType> {
    BUILT_IN
        .iter()
        .map(|(group, version, plural, kind, namespaced)| ResourceType {
            group: (*group).to_owned(),
            version: (*version).to_owned(),
            plural: (*plural).to_owned(),
            singular: kind.to_lowercase(),
            kind: (*kind).to_owned(),
            namespaced: *namespaced,
            categories: if IN_ALL.contains(kind) {
                vec!["all".to_owned()]
            } else {
                Vec::new()
            },
        })
        .collect()
}

/// The types a CustomResourceDefinition declares (one per served version).
pub fn from_crd(crd: &Value) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        names["plural"].as_str(),
        names["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let singular = names["singular"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let categories: Vec<String> = names["categories"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool().unwrap_or(true))
        .filter_map(|v| v["name"].as_str())
        .map(|version| ResourceType {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            singular: singular.clone(),
            kind: kind.to_owned(),
            namespaced,
            categories: categories.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_workload_kinds_are_in_the_all_category() {
        for ty in built_in() {
            let entry = ty.discovery();
            if IN_ALL.contains(&ty.kind.as_str()) {
                assert_eq!(entry["categories"], json!(["all"]), "{}", ty.kind);
            } else {
                assert!(entry.get("categories").is_none(), "{}", ty.kind);
            }
        }
        // Every kind of the category is served.
        for kind in IN_ALL {
            assert!(built_in().iter().any(|t| t.kind == *kind), "{kind}");
        }
    }

    #[test]
    fn a_crd_brings_its_categories() {
        let crd = json!({"spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
            "names": {"plural": "prometheuses", "kind": "Prometheus", "categories": ["prometheus-operator"]},
            "versions": [{"name": "v1", "served": true}]}});
        let types = from_crd(&crd);
        assert_eq!(types.len(), 1);
        assert_eq!(
            types[0].discovery()["categories"],
            json!(["prometheus-operator"])
        );
    }
}
