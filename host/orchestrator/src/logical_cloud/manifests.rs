//! What a standard logical cloud makes on each of its clusters: its
//! Namespace, a Role and RoleBinding per namespace its user's permissions
//! name (a ClusterRole and ClusterRoleBinding for `""`, the whole
//! cluster) and, when quotas are set, a ResourceQuota.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::resource::Resource;
use wasmco_core::specs::{LogicalCloudSpec, QuotaSpec, UserPermissionSpec};
use wasmco_core::tenancy::{POD_SECURITY_LABEL, PodSecurity};
use wasmco_store::db::{ResourceDb, ResourceId};

use crate::error::OrchestratorError;
use crate::target::LogicalCloudRef;

/// The cloud's objects, from its spec, its user's permissions and its
/// quotas.
///
/// The admin's cloud takes over a namespace that is on a cluster
/// already (and gives it back at terminate); a project's member's
/// cloud does not, and its namespace enforces `pod_security`.
pub(super) fn manifests(
    db: &ResourceDb,
    lc: &LogicalCloudRef,
    spec: &LogicalCloudSpec,
    permissions: Vec<UserPermissionSpec>,
    pod_security: Option<PodSecurity>,
) -> Result<Vec<Resource>, OrchestratorError> {
    let namespace = &spec.namespace;
    let hard = quota(db, lc)?;
    let mut manifests = vec![namespace_manifest(spec, pod_security)];
    for (target, rules) in rules(namespace, permissions) {
        manifests.extend(roles(lc, spec, &target, rules));
    }
    if !hard.is_empty() {
        manifests.push(json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": format!("{}-quota", lc.name), "namespace": namespace},
            "spec": {"hard": hard}}));
    }
    manifests
        .into_iter()
        .map(|m| {
            Resource::from_manifest(m)
                .map_err(|e| OrchestratorError::Input(format!("{}: {e}", lc.describe())))
        })
        .collect()
}

/// The user's rules by where they apply: the cloud's namespace, another
/// one (kube-system, say), or the whole cluster (""). Without
/// permissions, EMCO's default for a logical cloud's user: everything in
/// its namespace.
fn rules(namespace: &str, permissions: Vec<UserPermissionSpec>) -> BTreeMap<String, Vec<Value>> {
    let mut rules: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for permission in permissions {
        let target = permission
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_owned());
        rules.entry(target).or_default().push(json!({
            "apiGroups": permission.api_groups,
            "resources": permission.resources,
            "verbs": permission.verbs,
        }));
    }
    if rules.is_empty() {
        rules.insert(
            namespace.to_owned(),
            vec![json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})],
        );
    }
    rules
}

/// Every quota of the cloud, as one ResourceQuota's `hard`.
fn quota(
    db: &ResourceDb,
    lc: &LogicalCloudRef,
) -> Result<serde_json::Map<String, Value>, OrchestratorError> {
    let mut hard = serde_json::Map::new();
    let quotas: Vec<(ResourceId, QuotaSpec)> =
        db.list_specs(Kind::LogicalCloudQuota, &lc.path())?;
    for (_, QuotaSpec(quota)) in quotas {
        hard.extend(quota);
    }
    Ok(hard)
}

/// The cloud's Namespace, with its spec's labels. Kubernetes' own labels
/// (its Pod Security level among them) are the policy's and the
/// cluster's, not the spec's: a project's member's namespace gets the
/// policy's level; the admin's takes over one that is there already.
fn namespace_manifest(spec: &LogicalCloudSpec, pod_security: Option<PodSecurity>) -> Value {
    let mut namespace_manifest =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": spec.namespace}});
    let metadata = &mut namespace_manifest["metadata"];
    match pod_security {
        Some(level) => {
            let mut labels = spec.labels.clone();
            labels.retain(|key, _| !is_kubernetes_label(key));
            labels.insert(POD_SECURITY_LABEL.to_owned(), level.as_str().to_owned());
            metadata["labels"] = json!(labels);
        }
        None => {
            if !spec.labels.is_empty() {
                metadata["labels"] = json!(spec.labels);
            }
            metadata["annotations"] = json!({wasmco_core::cloud::FORCE_ANNOTATION: "true"});
        }
    }
    namespace_manifest
}

/// The role and its binding to the cloud's user that grant `rules` in
/// namespace `target` (the whole cluster for `""`).
fn roles(
    lc: &LogicalCloudRef,
    spec: &LogicalCloudSpec,
    target: &str,
    rules: Vec<Value>,
) -> [Value; 2] {
    let subjects = json!([{"kind": "User", "name": spec.user_name(),
                           "apiGroup": "rbac.authorization.k8s.io"}]);
    if target.is_empty() {
        let role = lc.cluster_wide_name("clusterrole");
        return [
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": role}, "rules": rules}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": lc.cluster_wide_name("clusterrolebinding")},
                "subjects": subjects,
                "roleRef": {"kind": "ClusterRole", "name": role, "apiGroup": "rbac.authorization.k8s.io"}}),
        ];
    }
    let name = &lc.name;
    let prefix = if target == spec.namespace {
        name.clone()
    } else {
        format!("{name}-{target}")
    };
    let role = format!("{prefix}-role");
    [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": role, "namespace": target}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("{prefix}-rolebinding"), "namespace": target},
            "subjects": subjects,
            "roleRef": {"kind": "Role", "name": role, "apiGroup": "rbac.authorization.k8s.io"}}),
    ]
}

/// Whether `key` is in one of Kubernetes' own label domains
/// (`kubernetes.io`, `k8s.io` and their subdomains), whose meaning the
/// cluster gives.
fn is_kubernetes_label(key: &str) -> bool {
    key.split_once('/').is_some_and(|(domain, _)| {
        ["kubernetes.io", "k8s.io"]
            .iter()
            .any(|own| domain == *own || domain.ends_with(&format!(".{own}")))
    })
}
