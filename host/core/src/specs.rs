//! The spec of each kind as a type. The API checks a body by deserializing
//! it into its kind's type and asking that type what it names; the
//! orchestrator reads stored bodies back into the same types, so a field is
//! interpreted in one place.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::controllers::{ControllerKind, LimitOverrides};
use crate::document::{Document, FieldError, Reference, check_name, from_value};
use crate::kinds::Kind;

mod ca_cert;
mod logical_cloud;

pub use ca_cert::{
    Algorithm, CERT_MANAGER_GROUP, CaCertClusterGroupSpec, CaCertLogicalCloudSpec, CaCertSpec,
    CsrInfo, GroupScope, IssuerKind, IssuerRef, IssuingCluster, KeyUsage, PublicKeyAlgorithm,
};
pub use logical_cloud::{
    ClusterReferenceSpec, LogicalCloudSpec, LogicalCloudUser, QuotaSpec, UserPermissionSpec,
    fill_default_user,
};

/// The key of a DIG intent that names its generic placement intent.
pub const GENERIC_PLACEMENT_KEY: &str = "genericPlacementIntent";

/// A stored spec as `T`; an error names the field at fault under `spec`.
pub fn read_spec<T: DeserializeOwned>(spec: &Value) -> Result<T, FieldError> {
    from_value(spec, "spec")
}

/// Where a body sits: its parent's path values.
struct Scope<'a> {
    parent: &'a [String],
}

impl Scope<'_> {
    /// A reference from `field` to the `kind` named `name` in the enclosing
    /// composite app version (an app, a composite profile).
    fn in_version(&self, field: impl Into<String>, kind: Kind, name: &str) -> Reference {
        let mut path = self.parent[..3].to_vec();
        path.push(name.to_owned());
        Reference {
            field: field.into(),
            kind,
            path,
        }
    }

    /// A reference from `field` to app `app` of the enclosing composite app
    /// version.
    fn app(&self, field: impl Into<String>, app: &str) -> Reference {
        self.in_version(field, Kind::App, app)
    }
}

/// A kind's spec: what it must satisfy beyond its shape, and what it names.
trait Spec: DeserializeOwned {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError>;
}

fn checked<T: Spec>(spec: &Value, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
    read_spec::<T>(spec)?.check(scope)
}

/// Checks `doc`'s spec for `kind` (whose parent path is `parent`) and returns
/// the resources it names.
pub fn check_spec(
    kind: Kind,
    parent: &[String],
    doc: &Document,
) -> Result<Vec<Reference>, FieldError> {
    let spec = &doc.spec;
    if !spec.is_object() {
        return Err(FieldError::new("spec", "must be an object"));
    }
    let scope = Scope { parent };
    match kind {
        Kind::Controller => {
            if spec.get("host").is_some() || spec.get("port").is_some() {
                return Err(FieldError::new(
                    "spec.host",
                    "wasmco controllers are uploaded as .wasm components, not reached at host and port",
                ));
            }
            checked::<ControllerSpec>(spec, &scope)
        }
        Kind::CompositeApp => checked::<CompositeAppSpec>(spec, &scope),
        Kind::ClusterKvPair | Kind::LogicalCloudKvPair => checked::<KvPairSpec>(spec, &scope),
        Kind::AppDependency => checked::<DependencySpec>(spec, &scope),
        Kind::AppProfile => checked::<AppProfileSpec>(spec, &scope),
        Kind::DeploymentIntentGroup => checked::<DigSpec>(spec, &scope),
        Kind::DigIntent => checked::<DigIntentSpec>(spec, &scope),
        Kind::GenericAppIntent => checked::<AppIntentSpec>(spec, &scope),
        Kind::LogicalCloud => checked::<LogicalCloudSpec>(spec, &scope),
        Kind::LogicalCloudClusterReference => checked::<ClusterReferenceSpec>(spec, &scope),
        Kind::LogicalCloudUserPermission => checked::<UserPermissionSpec>(spec, &scope),
        Kind::LogicalCloudQuota => checked::<QuotaSpec>(spec, &scope),
        Kind::CaCert | Kind::ProjectCaCert => checked::<CaCertSpec>(spec, &scope),
        Kind::CaCertClusterGroup | Kind::CaCertLcClusterGroup => {
            checked::<CaCertClusterGroupSpec>(spec, &scope)
        }
        Kind::CaCertLogicalCloud => checked::<CaCertLogicalCloudSpec>(spec, &scope),
        Kind::TenancyPolicy | Kind::ProviderTenancyPolicy => {
            read_spec::<crate::tenancy::TenancyPolicySpec>(spec)?.check()?;
            Ok(Vec::new())
        }
        Kind::ClusterNetwork => {
            read_spec::<crate::network::NetworkSpec>(spec)?.check()?;
            Ok(Vec::new())
        }
        Kind::ClusterProviderNetwork => {
            read_spec::<crate::network::ProviderNetworkSpec>(spec)?.check()?;
            Ok(Vec::new())
        }
        Kind::ClusterProvider
        | Kind::Cluster
        | Kind::ClusterLabel
        | Kind::Project
        | Kind::App
        | Kind::CompositeProfile
        | Kind::GenericPlacementIntent
        | Kind::ControllerIntent
        // Checked against the declaring controller's schema by the API.
        | Kind::Intent => Ok(Vec::new()),
    }
}

/// A controller's spec: EMCO's, without host and port, plus limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControllerSpec {
    /// Placement or action.
    #[serde(rename = "type")]
    pub kind: ControllerKind,
    /// Lower runs first within its kind.
    #[serde(default)]
    pub priority: u32,
    /// Limits tighter than the host's.
    #[serde(default)]
    pub limits: LimitOverrides,
}

impl Spec for ControllerSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        Ok(Vec::new())
    }
}

/// A composite app's spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompositeAppSpec {
    /// The version its first version is created under.
    pub composite_app_version: String,
}

impl Spec for CompositeAppSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.compositeAppVersion", &self.composite_app_version)?;
        Ok(Vec::new())
    }
}

/// A cluster's key/value pairs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvPairSpec {
    /// The pairs, as EMCO writes them: a list of one-entry maps.
    pub kv: Vec<BTreeMap<String, Value>>,
}

impl Spec for KvPairSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        for (i, pair) in self.kv.iter().enumerate() {
            for (key, value) in pair {
                if !value.is_string() {
                    return Err(FieldError::new(
                        format!("spec.kv[{i}].{key}"),
                        "values are strings",
                    ));
                }
            }
        }
        Ok(Vec::new())
    }
}

/// An app's dependency on another app of its composite app.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DependencySpec {
    /// The app depended on.
    pub app: String,
    /// What the other app must have reached.
    #[serde(default)]
    pub op_status: OpStatus,
    /// Seconds to wait after it has.
    #[serde(default)]
    pub wait: u64,
}

impl Spec for DependencySpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.app", &self.app)?;
        Ok(vec![scope.app("spec.app", &self.app)])
    }
}

/// What an app waits for in the app it depends on (EMCO's `opStatus`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum OpStatus {
    /// Its resources are ready on every cluster.
    #[default]
    Ready,
    /// Its resources are applied on every cluster.
    Deployed,
}

/// An app profile: the values file for one app.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppProfileSpec {
    /// The app it is for.
    pub app: String,
}

impl Spec for AppProfileSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.app", &self.app)?;
        Ok(vec![scope.app("spec.app", &self.app)])
    }
}

/// A deployment intent group's spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DigSpec {
    /// The composite profile whose app profiles render the apps.
    pub composite_profile: String,
    /// The release: EMCO's DIG `version`.
    pub version: String,
    /// Values applied after the profiles', per app.
    #[serde(default)]
    pub override_values: Vec<OverrideValues>,
    /// The logical cloud it deploys to (its namespace is a chart's
    /// release namespace).
    #[serde(default)]
    pub logical_cloud: Option<String>,
}

impl Spec for DigSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.compositeProfile", &self.composite_profile)?;
        let mut refs = vec![scope.in_version(
            "spec.compositeProfile",
            Kind::CompositeProfile,
            &self.composite_profile,
        )];
        for (i, values) in self.override_values.iter().enumerate() {
            let field = format!("spec.overrideValues[{i}].app");
            check_name(&field, &values.app)?;
            refs.push(scope.app(field, &values.app));
        }
        // EMCO's ref-schemas check the logical cloud at create too (whether
        // it is instantiated is checked at instantiate).
        if let Some(cloud) = self.logical_cloud.as_deref().filter(|c| !c.is_empty()) {
            check_name("spec.logicalCloud", cloud)?;
            refs.push(Reference {
                field: "spec.logicalCloud".into(),
                kind: Kind::LogicalCloud,
                path: vec![scope.parent[0].clone(), cloud.to_owned()],
            });
        }
        Ok(refs)
    }
}

/// One app's override values in a DIG.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideValues {
    /// The app.
    pub app: String,
    /// For a plain-manifest app, `Kind/name` to an RFC 7386 merge patch
    /// for that resource; for a chart, Helm `--set` values
    /// (`"image.tag": "1.2"`).
    pub values: serde_json::Map<String, Value>,
}

/// What emcoctl (Go's templates) writes for a value its values file does
/// not set. EMCO's sfc examples leave their controllers' intent names unset,
/// as sfc and sfcclient read every intent of their kinds whatever the name.
pub const UNSET_INTENT_NAME: &str = "<no value>";

/// A DIG intent: which intent of each controller the DIG uses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigIntentSpec {
    /// Controller name (or [`GENERIC_PLACEMENT_KEY`]) to intent name.
    pub intent: BTreeMap<String, String>,
}

impl Spec for DigIntentSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        let mut refs = Vec::new();
        for (controller, intent) in &self.intent {
            let field = format!("spec.intent.{controller}");
            if intent != UNSET_INTENT_NAME {
                check_name(&field, intent)?;
            }
            // As EMCO: the controllers named must exist; the intents they
            // name are looked up at instantiate (EMCO's files create them
            // after this document).
            if controller != GENERIC_PLACEMENT_KEY {
                check_name(&format!("spec.intent (key {controller:?})"), controller)?;
                refs.push(Reference {
                    field,
                    kind: Kind::Controller,
                    path: vec![controller.clone()],
                });
            }
        }
        Ok(refs)
    }
}

/// A generic placement intent's entry for one app.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppIntentSpec {
    /// The app.
    pub app: String,
    /// Where it goes.
    pub intent: PlacementIntent,
}

impl Spec for AppIntentSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.app", &self.app)?;
        for (i, entry) in self.intent.all_of.iter().enumerate() {
            entry.check(&format!("spec.intent.allOf[{i}]"), false)?;
        }
        for (i, entry) in self.intent.any_of.iter().enumerate() {
            entry.check(&format!("spec.intent.anyOf[{i}]"), true)?;
        }
        if self.intent.all_of.is_empty() && self.intent.any_of.is_empty() {
            return Err(FieldError::new("spec.intent", "needs allOf or anyOf"));
        }
        // As EMCO's ref-schemas have it: the clusters (and providers) an
        // intent names exist when it is made.
        let mut references = vec![scope.app("spec.app", &self.app)];
        let entries = |list: &[PlacementEntry], name: &str| {
            list.iter()
                .enumerate()
                .flat_map(|(i, entry)| entry.references(&format!("spec.intent.{name}[{i}]")))
                .collect::<Vec<_>>()
        };
        references.extend(entries(&self.intent.all_of, "allOf"));
        references.extend(entries(&self.intent.any_of, "anyOf"));
        Ok(references)
    }
}

/// EMCO's placement intent: clusters every one of which gets the app, and
/// clusters one of which does.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementIntent {
    /// Each entry gets the app.
    #[serde(default)]
    pub all_of: Vec<PlacementEntry>,
    /// One entry gets the app.
    #[serde(default)]
    pub any_of: Vec<PlacementEntry>,
}

/// A cluster by name or label, or a nested anyOf group.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementEntry {
    /// The provider of the cluster(s).
    #[serde(default)]
    pub cluster_provider: Option<String>,
    /// One cluster.
    #[serde(default)]
    pub cluster: Option<String>,
    /// The clusters with this label.
    #[serde(default)]
    pub cluster_label: Option<String>,
    /// A group of which one entry gets the app.
    #[serde(default)]
    pub any_of: Option<Vec<PlacementEntry>>,
}

impl PlacementEntry {
    /// The clusters (by name) and providers (of a label) it names.
    fn references(&self, field: &str) -> Vec<Reference> {
        if let Some(any_of) = &self.any_of {
            return any_of
                .iter()
                .enumerate()
                .flat_map(|(i, entry)| entry.references(&format!("{field}.anyOf[{i}]")))
                .collect();
        }
        let provider = self.cluster_provider.clone().unwrap_or_default();
        match &self.cluster {
            Some(cluster) => vec![Reference {
                field: format!("{field}.cluster"),
                kind: Kind::Cluster,
                path: vec![provider, cluster.clone()],
            }],
            None => vec![Reference {
                field: format!("{field}.clusterProvider"),
                kind: Kind::ClusterProvider,
                path: vec![provider],
            }],
        }
    }

    fn check(&self, field: &str, nested: bool) -> Result<(), FieldError> {
        if let Some(any_of) = &self.any_of {
            if nested {
                return Err(FieldError::new(
                    field,
                    "an anyOf may not nest another anyOf",
                ));
            }
            if self.cluster_provider.is_some()
                || self.cluster.is_some()
                || self.cluster_label.is_some()
            {
                return Err(FieldError::new(
                    field,
                    "an entry holds either anyOf or a cluster selector, not both",
                ));
            }
            for (i, entry) in any_of.iter().enumerate() {
                entry.check(&format!("{field}.anyOf[{i}]"), true)?;
            }
            return Ok(());
        }
        let provider = self
            .cluster_provider
            .as_deref()
            .ok_or_else(|| FieldError::new(format!("{field}.clusterProvider"), "is required"))?;
        check_name(&format!("{field}.clusterProvider"), provider)?;
        match (&self.cluster, &self.cluster_label) {
            (Some(_), Some(_)) => Err(FieldError::new(
                field,
                "names both cluster and clusterLabel; name one",
            )),
            (None, None) => Err(FieldError::new(
                field,
                "names neither cluster nor clusterLabel",
            )),
            (Some(name), None) => check_name(&format!("{field}.cluster"), name),
            (None, Some(label)) => check_name(&format!("{field}.clusterLabel"), label),
        }
    }
}

/// A Kubernetes label: its key an optional DNS subdomain prefix and `/`
/// and a name; its value empty or a name (at most 63 characters each, of
/// letters, digits, `-`, `_` and `.`, alphanumeric at both ends).
pub fn check_label(field: &str, key: &str, value: &str) -> Result<(), FieldError> {
    fn name_ok(name: &str) -> bool {
        name.len() <= 63
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
    }
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|prefix| {
        prefix.len() <= 253
            && prefix
                .split('.')
                .all(|part| check_dns_label(field, part).is_ok())
    });
    if !prefix_ok || !name_ok(name) {
        return Err(FieldError::new(
            field,
            format!(
                "{key:?} is not a Kubernetes label key ([prefix/]name, name at most 63 of letters, digits, '-', '_', '.')"
            ),
        ));
    }
    if !value.is_empty() && !name_ok(value) {
        return Err(FieldError::new(
            field,
            format!(
                "{value:?} is not a Kubernetes label value (at most 63 of letters, digits, '-', '_', '.')"
            ),
        ));
    }
    Ok(())
}

/// A Kubernetes DNS-1123 label (namespace names).
pub fn check_dns_label(field: &str, value: &str) -> Result<(), FieldError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!(
                "{value:?} is not a Kubernetes namespace name (lower-case letters, digits, '-', at most 63)"
            ),
        ))
    }
}
