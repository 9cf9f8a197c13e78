//! What a project's deployments may put on the clusters.
//!
//! A project's tokens are bounded in the API; on the clusters they are
//! bounded by a tenancy policy the admin sets, on the project or on a
//! cluster provider (the project's own wins, then the provider's, then
//! the defaults). The defaults let a project's objects land only in its
//! logical clouds' namespaces, and refuse cluster-scoped kinds, bindings
//! to ClusterRoles, and a logical cloud's permissions beyond its own
//! namespace. The admin's own actions are not confined.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::document::FieldError;
use crate::kube_names::check_dns_label;
use crate::resource::Resource;

// The shapes `TenancyPolicySpec::check` holds its entries to, as JSON
// Schema patterns, so that its schema says what the check refuses.

/// A namespace (`check_dns_label`), a prefix of one ending in `*`, or `*`.
const NAMESPACE_GRANT_PATTERN: &str =
    "^(\\*|[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?|[a-z0-9][a-z0-9-]{0,61}\\*)$";

/// `Kind`, `group/Kind`, or `*`.
const KIND_GRANT_PATTERN: &str = "^(\\*|([A-Za-z0-9.-]+/)?[A-Za-z0-9]+)$";

/// Text without control characters.
const PRINTABLE_PATTERN: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$";

/// `…/tenancy-policies/{name}`: what the admin allows a project (or every
/// project on a cluster provider's clusters) beyond the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenancyPolicySpec {
    /// Namespaces its objects may go to besides its logical clouds':
    /// names, or prefixes ending in `*` (`shop-*`); `*` is every one.
    #[serde(default)]
    #[schemars(inner(pattern(NAMESPACE_GRANT_PATTERN)))]
    pub namespaces: Vec<String>,
    /// Kinds the defaults refuse that it may deploy (cluster-scoped kinds,
    /// CRDs, webhooks): `Kind` or `group/Kind`; `*` is every kind.
    #[serde(default)]
    #[schemars(inner(pattern(KIND_GRANT_PATTERN)))]
    pub kinds: Vec<String>,
    /// ClusterRoles its RoleBindings and ClusterRoleBindings may bind;
    /// `*` is every one.
    #[serde(default)]
    #[schemars(inner(length(min = 1, max = 253), pattern(PRINTABLE_PATTERN)))]
    pub cluster_roles: Vec<String>,
    /// Whether its logical clouds may grant their users permissions beyond
    /// the cloud's own namespace (the whole cluster, or another namespace).
    #[serde(default)]
    pub cluster_wide_permissions: bool,
    /// Whether its deployments may run with the clusters' own credentials
    /// (no logical cloud, or an admin one) rather than as a standard
    /// logical cloud's user, whose Role the cluster enforces.
    #[serde(default)]
    pub cluster_credentials: bool,
    /// The Pod Security level its logical clouds' namespaces enforce:
    /// `restricted`, `baseline` (the default) or `privileged`.
    #[serde(default)]
    pub pod_security: Option<PodSecurity>,
}

/// A Kubernetes Pod Security Standard, as a namespace enforces it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PodSecurity {
    /// Everything hardened.
    Restricted,
    /// No privileged or host-sharing Pods.
    #[default]
    Baseline,
    /// Anything.
    Privileged,
}

impl PodSecurity {
    /// As the namespace label takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PodSecurity::Restricted => "restricted",
            PodSecurity::Baseline => "baseline",
            PodSecurity::Privileged => "privileged",
        }
    }
}

/// The label a namespace enforces its Pod Security level by.
pub const POD_SECURITY_LABEL: &str = "pod-security.kubernetes.io/enforce";

impl TenancyPolicySpec {
    /// Checks the names it holds.
    pub fn check(&self) -> Result<(), FieldError> {
        for (i, pattern) in self.namespaces.iter().enumerate() {
            let name = pattern.strip_suffix('*').unwrap_or(pattern);
            if pattern.is_empty() {
                return Err(FieldError::new(
                    format!("spec.namespaces[{i}]"),
                    "must be a namespace, a prefix ending in *, or *",
                ));
            }
            if !name.is_empty() {
                // A prefix need not end as a name does.
                let whole = if pattern.ends_with('*') {
                    format!("{name}x")
                } else {
                    name.to_owned()
                };
                check_dns_label(&format!("spec.namespaces[{i}]"), &whole)?;
            }
        }
        for (i, kind) in self.kinds.iter().enumerate() {
            let bare = kind.rsplit('/').next().unwrap_or_default();
            if kind != "*" && (bare.is_empty() || !bare.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                return Err(FieldError::new(
                    format!("spec.kinds[{i}]"),
                    format!("{kind:?} is not a kind: Kind, group/Kind or *"),
                ));
            }
        }
        for (i, role) in self.cluster_roles.iter().enumerate() {
            if role.is_empty() || role.len() > 253 || role.chars().any(char::is_control) {
                return Err(FieldError::new(
                    format!("spec.clusterRoles[{i}]"),
                    "must be a ClusterRole's name or *",
                ));
            }
        }
        Ok(())
    }
}

/// The rules one project's deployment is held to: its policies' union
/// (or the defaults) with its logical clouds' namespaces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Confinement {
    /// Namespaces (and `prefix*` patterns) its objects may go to.
    pub namespaces: BTreeSet<String>,
    /// Kinds allowed beyond the defaults (`Kind`, `group/Kind`, `*`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub kinds: BTreeSet<String>,
    /// ClusterRoles bindings may refer to.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub cluster_roles: BTreeSet<String>,
    /// Logical clouds' permissions beyond their namespace.
    #[serde(default)]
    pub cluster_wide_permissions: bool,
    /// Deployments with the clusters' own credentials.
    #[serde(default)]
    pub cluster_credentials: bool,
    /// The loosest Pod Security level a policy grants.
    #[serde(default)]
    pub pod_security: PodSecurity,
}

/// Kubernetes' own cluster-scoped kinds, by group: a project's object of
/// one of them would reach past its namespaces.
const CLUSTER_SCOPED: &[(&str, &[&str])] = &[
    (
        "",
        &["Namespace", "Node", "PersistentVolume", "ComponentStatus"],
    ),
    (
        "rbac.authorization.k8s.io",
        &["ClusterRole", "ClusterRoleBinding"],
    ),
    ("apiextensions.k8s.io", &["CustomResourceDefinition"]),
    (
        "admissionregistration.k8s.io",
        &[
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
        ],
    ),
    ("apiregistration.k8s.io", &["APIService"]),
    (
        "storage.k8s.io",
        &[
            "StorageClass",
            "CSIDriver",
            "CSINode",
            "VolumeAttachment",
            "VolumeAttributesClass",
        ],
    ),
    ("scheduling.k8s.io", &["PriorityClass"]),
    ("node.k8s.io", &["RuntimeClass"]),
    (
        "networking.k8s.io",
        &["IngressClass", "IPAddress", "ServiceCIDR"],
    ),
    (
        "certificates.k8s.io",
        &["CertificateSigningRequest", "ClusterTrustBundle"],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        &["FlowSchema", "PriorityLevelConfiguration"],
    ),
    ("resource.k8s.io", &["DeviceClass", "ResourceSlice"]),
];

/// The API group of an `apiVersion` (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// Whether `group`/`kind` is one of Kubernetes' cluster-scoped kinds.
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    CLUSTER_SCOPED
        .iter()
        .any(|(g, kinds)| *g == group && kinds.contains(&kind))
}

/// Whether `namespace` is `pattern` (a name, `prefix*`, or `*`).
fn namespace_matches(pattern: &str, namespace: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => namespace.starts_with(prefix),
        None => pattern == namespace,
    }
}

/// Why one object breaks the rules, naming the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object} is refused by the tenancy policy: {rule}")]
pub struct Breach {
    /// `Kind name` (and its namespace).
    pub object: String,
    /// The rule, and what would allow it.
    pub rule: String,
}

impl Confinement {
    /// `policies`' union (the defaults when there are none) with
    /// `own_namespaces`, the project's logical clouds' namespaces.
    pub fn new<'a>(
        policies: impl IntoIterator<Item = &'a TenancyPolicySpec>,
        own_namespaces: impl IntoIterator<Item = String>,
    ) -> Self {
        let mut confinement = Confinement {
            namespaces: own_namespaces.into_iter().collect(),
            ..Confinement::default()
        };
        let mut pod_security = None;
        for policy in policies {
            confinement
                .namespaces
                .extend(policy.namespaces.iter().cloned());
            confinement.kinds.extend(policy.kinds.iter().cloned());
            confinement
                .cluster_roles
                .extend(policy.cluster_roles.iter().cloned());
            confinement.cluster_wide_permissions |= policy.cluster_wide_permissions;
            confinement.cluster_credentials |= policy.cluster_credentials;
            let level = policy.pod_security.unwrap_or_default();
            pod_security =
                Some(pod_security.map_or(level, |loosest: PodSecurity| loosest.max(level)));
        }
        confinement.pod_security = pod_security.unwrap_or_default();
        confinement
    }

    /// Whether objects may go to `namespace`.
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        self.namespaces
            .iter()
            .any(|pattern| namespace_matches(pattern, namespace))
    }

    /// Whether the policy allows `group`/`kind` beyond the defaults. A
    /// bare `Kind` that Kubernetes has is Kubernetes' own, not a custom
    /// kind of the same name in another group.
    pub fn allows_kind(&self, group: &str, kind: &str) -> bool {
        let builtin_group = CLUSTER_SCOPED
            .iter()
            .find(|(_, kinds)| kinds.contains(&kind))
            .map(|(g, _)| *g);
        self.kinds.iter().any(|allowed| {
            allowed == "*"
                || (allowed == kind && builtin_group.is_none_or(|g| g == group))
                || allowed
                    .split_once('/')
                    .is_some_and(|(g, k)| g == group && k == kind)
        })
    }

    fn allows_cluster_role(&self, role: &str) -> bool {
        self.cluster_roles.iter().any(|r| r == "*" || r == role)
    }

    /// Checks one object that would land in `default_namespace` when it
    /// names none. A kind Kubernetes does not list (a custom resource's)
    /// is taken as namespaced here; rsync checks its real scope on the
    /// cluster.
    pub fn check(&self, resource: &Resource, default_namespace: &str) -> Result<(), Breach> {
        let kind = resource.key.kind.as_str();
        let group = group_of(&resource.api_version);
        let object = format!("{kind} {}", resource.key.name);
        let breach = |object: String, rule: String| Breach { object, rule };
        if is_cluster_scoped(group, kind) {
            if !self.allows_kind(group, kind) {
                return Err(breach(
                    object,
                    format!(
                        "{kind} is cluster-scoped, and cluster-scoped kinds need the admin's \
                         allowance (spec.kinds of a tenancy policy)"
                    ),
                ));
            }
            // A Namespace is a namespace the project takes: by its name.
            let name = &resource.key.name;
            if group.is_empty() && kind == "Namespace" && !self.allows_namespace(name) {
                return Err(breach(
                    object,
                    format!(
                        "namespace {name} is not one of the project's logical clouds' and no \
                         tenancy policy allows it (spec.namespaces)"
                    ),
                ));
            }
        } else {
            let namespace = resource.namespace.as_deref().unwrap_or(default_namespace);
            if !self.allows_namespace(namespace) {
                return Err(breach(
                    format!("{object} in namespace {namespace}"),
                    format!(
                        "namespace {namespace} is not one of the project's logical clouds' \
                         and no tenancy policy allows it (spec.namespaces)"
                    ),
                ));
            }
        }
        if group == "rbac.authorization.k8s.io"
            && matches!(kind, "RoleBinding" | "ClusterRoleBinding")
            && resource.manifest["roleRef"]["kind"] == "ClusterRole"
        {
            let role = resource.manifest["roleRef"]["name"]
                .as_str()
                .unwrap_or_default();
            if !self.allows_cluster_role(role) {
                return Err(breach(
                    object,
                    format!(
                        "it binds ClusterRole {role}, and bindings to ClusterRoles need the \
                         admin's allowance (spec.clusterRoles of a tenancy policy)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks an object of `kind` on a cluster that serves it with the
    /// given scope (rsync's check, where the scope is known).
    pub fn check_scope(
        &self,
        resource: &Resource,
        cluster_scoped: bool,
        default_namespace: &str,
    ) -> Result<(), Breach> {
        let kind = resource.key.kind.as_str();
        let group = group_of(&resource.api_version);
        if cluster_scoped && !self.allows_kind(group, kind) {
            return Err(Breach {
                object: format!("{kind} {}", resource.key.name),
                rule: format!(
                    "{kind} is cluster-scoped on this cluster, and cluster-scoped kinds need the \
                     admin's allowance (spec.kinds of a tenancy policy)"
                ),
            });
        }
        if cluster_scoped {
            return Ok(());
        }
        self.check(resource, default_namespace)
    }
}

/// Namespaces a project's logical cloud may not take without the admin's
/// allowance: Kubernetes' own.
pub fn is_system_namespace(namespace: &str) -> bool {
    namespace == "default" || namespace.starts_with("kube-")
}

/// Whether a logical cloud's user name would stand for Kubernetes itself
/// or a system group.
pub fn is_system_user(user: &str) -> bool {
    user.starts_with("system:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(manifest: serde_json::Value) -> Resource {
        Resource::from_manifest(manifest).unwrap()
    }

    #[test]
    fn the_defaults_keep_a_project_in_its_clouds_namespaces() {
        let confined = Confinement::new([], ["shop".to_owned()]);
        let config = |ns: Option<&str>| {
            let mut m = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
            if let Some(ns) = ns {
                m["metadata"]["namespace"] = json!(ns);
            }
            object(m)
        };
        assert!(confined.check(&config(None), "shop").is_ok());
        assert!(confined.check(&config(Some("shop")), "default").is_ok());
        let breach = confined.check(&config(None), "default").unwrap_err();
        assert!(breach.to_string().contains("namespace default"), "{breach}");
        assert!(confined.check(&config(Some("other")), "shop").is_err());

        let binding = object(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding", "metadata": {"name": "escalate"},
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]}));
        let breach = confined.check(&binding, "shop").unwrap_err();
        assert!(breach.rule.contains("cluster-scoped"), "{breach}");
        let role_binding = object(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding", "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "admin"}}));
        assert!(
            confined
                .check(&role_binding, "shop")
                .unwrap_err()
                .rule
                .contains("ClusterRole admin")
        );
        let crd = object(json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "x.example.com"}}));
        assert!(confined.check(&crd, "shop").is_err());
    }

    #[test]
    fn a_policy_widens_what_it_names_and_nothing_else() {
        let policy = TenancyPolicySpec {
            namespaces: vec!["shop-*".into()],
            kinds: vec!["Namespace".into()],
            cluster_roles: vec!["view".into()],
            ..TenancyPolicySpec::default()
        };
        policy.check().unwrap();
        let confined = Confinement::new([&policy], []);
        assert!(confined.allows_namespace("shop-a"));
        assert!(!confined.allows_namespace("shopping"));
        let namespace = |name: &str| {
            object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
        };
        assert!(confined.check(&namespace("shop-b"), "shop-a").is_ok());
        // Allowed the kind, a project takes only namespaces it may use.
        for elsewhere in ["kube-system", "argocd", "shopping"] {
            let breach = confined.check(&namespace(elsewhere), "shop-a").unwrap_err();
            assert!(breach.rule.contains("spec.namespaces"), "{}", breach.rule);
        }
        // A bare kind is Kubernetes' own, not a look-alike of another group.
        let look_alike = object(json!({"apiVersion": "example.com/v1", "kind": "Namespace",
            "metadata": {"name": "x", "namespace": "shop-a"}}));
        assert!(!confined.allows_kind("example.com", "Namespace"));
        assert!(confined.check_scope(&look_alike, true, "shop-a").is_err());
        // The loosest Pod Security level its policies name; baseline unless one does.
        assert_eq!(confined.pod_security, PodSecurity::Baseline);
        let restricted = TenancyPolicySpec {
            pod_security: Some(PodSecurity::Restricted),
            ..TenancyPolicySpec::default()
        };
        assert_eq!(
            Confinement::new([&restricted], []).pod_security,
            PodSecurity::Restricted
        );
        assert_eq!(
            Confinement::new([&restricted, &policy], []).pod_security,
            PodSecurity::Baseline
        );
        let pv = object(
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "n"}}),
        );
        assert!(confined.check(&pv, "shop-a").is_err());
        let view = object(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding", "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "view"}}));
        assert!(confined.check(&view, "shop-a").is_ok());
        // A custom kind served cluster-wide is caught where its scope is known.
        let custom = object(
            json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}),
        );
        assert!(confined.check_scope(&custom, false, "shop-a").is_ok());
        assert!(confined.check_scope(&custom, true, "shop-a").is_err());
        let bad = TenancyPolicySpec {
            kinds: vec!["no such/kind!".into()],
            ..TenancyPolicySpec::default()
        };
        assert_eq!(bad.check().unwrap_err().field, "spec.kinds[0]");
    }
}
