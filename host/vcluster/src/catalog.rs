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
    ("CustomResourceDefinition", "crd"),
];

const BUILT_IN: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "namespaces", "Namespace", false),
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
        })
        .collect()
}
