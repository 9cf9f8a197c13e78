//! A logical cloud's specs (EMCO's dcm): the cloud, its cluster
//! references, its user's permissions and its quotas.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::checking::{Scope, Spec};
use super::patterns::{
    LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, NAME_PATTERN, NAMESPACE_OR_EMPTY_PATTERN,
    NAMESPACE_PATTERN, USER_NAME_PATTERN,
};
use crate::document::{FieldError, Reference, check_name};
use crate::kinds::Kind;
use crate::kube_names::{check_dns_label, check_label};

/// A logical cloud's spec (EMCO's dcm): its level, namespace and user.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = admin_or_standard)]
pub struct LogicalCloudSpec {
    /// EMCO's level: `"0"` for an admin cloud (the clusters' own
    /// kubeconfigs, no namespace, user or quota), `"1"` (the default) for
    /// a standard one.
    #[serde(default)]
    pub level: Option<Value>,
    /// The namespace made in every referenced cluster (standard clouds).
    #[serde(default)]
    #[schemars(pattern(NAMESPACE_PATTERN))]
    pub namespace: String,
    /// The user given access to it (standard clouds).
    #[serde(default)]
    pub user: Option<LogicalCloudUser>,
    /// Labels of the namespace it makes (EMCO's: network policies and
    /// chains select namespaces by them).
    #[serde(default)]
    #[schemars(extend(
        "propertyNames" = {"maxLength": 253, "pattern": LABEL_KEY_PATTERN},
        "additionalProperties" = {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN},
    ))]
    pub labels: BTreeMap<String, String>,
}

/// What [`LogicalCloudSpec`]'s check holds a cloud to, by its level,
/// which no field's type says: an admin cloud (level 0) needs nothing else
/// and its namespace may be empty; a standard one (level 1, the default)
/// needs its namespace (its user is `<project>:<cloud>` when not given).
fn admin_or_standard(schema: &mut Schema) {
    let level = |level: u64| {
        serde_json::json!({"oneOf": [
            {"type": "string", "enum": [level.to_string()]},
            {"type": "integer", "enum": [level]},
        ]})
    };
    let admin = serde_json::json!({"type": "object", "required": ["level"], "properties": {
        "level": level(0),
        "namespace": {"type": "string", "pattern": NAMESPACE_OR_EMPTY_PATTERN},
    }});
    let description = schema.remove("description");
    let mut standard = schema.clone();
    standard.insert("required".into(), serde_json::json!(["namespace"]));
    if let Some(properties) = standard
        .get_mut("properties")
        .and_then(|p| p.as_object_mut())
    {
        let mut level = level(1);
        level["nullable"] = true.into();
        properties.insert("level".into(), level);
    }
    *schema = json_schema!({"oneOf": [admin, standard]});
    if let Some(description) = description {
        schema.insert("description".into(), description);
    }
}

impl LogicalCloudSpec {
    /// Whether it is an admin cloud (EMCO's level 0).
    pub fn is_admin(&self) -> bool {
        matches!(&self.level, Some(Value::String(l)) if l.trim() == "0")
            || matches!(&self.level, Some(Value::Number(n)) if n.as_u64() == Some(0))
    }

    /// The user's name; empty for an admin cloud.
    pub fn user_name(&self) -> &str {
        self.user.as_ref().map_or("", |u| u.user_name.as_str())
    }
}

impl Spec for LogicalCloudSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        let level_known = match &self.level {
            None => true,
            Some(Value::String(l)) => matches!(l.trim(), "0" | "1"),
            Some(Value::Number(n)) => matches!(n.as_u64(), Some(0 | 1)),
            Some(_) => false,
        };
        if !level_known {
            return Err(FieldError::new(
                "spec.level",
                "must be \"0\" (an admin cloud: the clusters' own kubeconfigs) or \"1\" (a standard cloud: a namespace and a user)",
            ));
        }
        if self.is_admin() {
            // Its namespace, if given, is where its DIGs' objects go
            // when they name none: a path segment on every cluster.
            if !self.namespace.is_empty() {
                check_dns_label("spec.namespace", &self.namespace)?;
            }
            return Ok(Vec::new());
        }
        if self.namespace.is_empty() {
            return Err(FieldError::new(
                "spec.namespace",
                "a standard logical cloud (level \"1\") needs the namespace it makes in its clusters; an admin cloud is level \"0\"",
            ));
        }
        check_dns_label("spec.namespace", &self.namespace)?;
        let user = self.user_name();
        if user.is_empty() || user.len() > 253 || user.chars().any(|c| c.is_control() || c == '/') {
            return Err(FieldError::new(
                "spec.user.userName",
                "must be 1 to 253 characters, without '/' or control characters",
            ));
        }
        for (key, value) in &self.labels {
            check_label(&format!("spec.labels.{key}"), key, value)?;
        }
        Ok(Vec::new())
    }
}

/// Gives a standard cloud whose spec names no user (EMCO does not require
/// one) the user `<project>:<cloud>`: a name of the project's own, which
/// no cluster knows otherwise and which a project's token may use.
pub fn fill_default_user(project: &str, cloud: &str, spec: &mut Value) {
    let Ok(read) = serde_json::from_value::<LogicalCloudSpec>(spec.clone()) else {
        // Refused by the check that follows, naming the field.
        return;
    };
    if read.is_admin() || read.user.is_some() {
        return;
    }
    if let Value::Object(fields) = spec {
        fields.insert(
            "user".into(),
            serde_json::json!({"userName": format!("{project}:{cloud}"), "type": "certificate"}),
        );
    }
}

/// A logical cloud's user.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalCloudUser {
    /// The certificate's common name: the Kubernetes user.
    #[schemars(length(min = 1, max = 253), pattern(USER_NAME_PATTERN))]
    pub user_name: String,
}

/// A logical cloud's reference to a cluster.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterReferenceSpec {
    /// The cluster's provider.
    #[schemars(pattern(NAME_PATTERN))]
    pub cluster_provider: String,
    /// The cluster.
    #[schemars(pattern(NAME_PATTERN))]
    pub cluster: String,
    /// EMCO's load balancer address for the cluster (kept, not used); its
    /// JSON is read case-insensitively, so EMCO's files spell it several ways.
    #[serde(
        default,
        rename = "loadBalancerIP",
        alias = "loadbalancerIp",
        alias = "loadBalancerIp",
        alias = "loadbalancerIP",
        alias = "loadbalancerip"
    )]
    pub load_balancer_ip: Option<String>,
    /// EMCO's stored user certificate (kept, not used: wasmco issues its own).
    #[serde(default)]
    pub certificate: Option<String>,
}

impl Spec for ClusterReferenceSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.clusterProvider", &self.cluster_provider)?;
        check_name("spec.cluster", &self.cluster)?;
        Ok(vec![Reference {
            field: "spec.cluster".into(),
            kind: Kind::Cluster,
            path: vec![self.cluster_provider, self.cluster],
        }])
    }
}

/// One rule of a logical cloud user's Role.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserPermissionSpec {
    /// The namespace it applies to: the logical cloud's when left out,
    /// the whole cluster when `""` (a privileged cloud).
    #[serde(default, skip_serializing)]
    #[schemars(pattern(NAMESPACE_OR_EMPTY_PATTERN))]
    pub namespace: Option<String>,
    /// API groups (`""` is the core group).
    #[serde(default)]
    pub api_groups: Vec<String>,
    /// Resources.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Verbs.
    #[schemars(length(min = 1))]
    pub verbs: Vec<String>,
}

impl Spec for UserPermissionSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        if self.verbs.is_empty() {
            return Err(FieldError::new("spec.verbs", "needs at least one verb"));
        }
        // "" is the whole cluster; any other is a namespace there.
        if let Some(namespace) = self.namespace.as_deref().filter(|n| !n.is_empty()) {
            check_dns_label("spec.namespace", namespace)?;
        }
        Ok(Vec::new())
    }
}

/// A logical cloud's quota: resource names to quantities.
// Read as any JSON so a quantity that is not a string is refused by its key.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct QuotaSpec(#[schemars(with = "BTreeMap<String, String>")] pub BTreeMap<String, Value>);

impl Spec for QuotaSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        for (key, value) in &self.0 {
            if !value.is_string() {
                return Err(FieldError::new(
                    format!("spec.{key}"),
                    "quantities are strings (\"10\", \"4Gi\")",
                ));
            }
        }
        Ok(Vec::new())
    }
}
