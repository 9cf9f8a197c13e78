//! The spec of each kind as a type. The API checks a body by deserializing
//! it into its kind's type and asking that type what it names; the
//! orchestrator reads stored bodies back into the same types, so a field is
//! interpreted in one place.

use crate::document::{Document, FieldError, Reference};
use crate::kinds::Kind;

mod app;
mod ca_cert;
mod checking;
mod cluster_deployment;
mod controller;
mod dig;
mod failover;
mod kv_pairs;
mod logical_cloud;
mod patterns;
mod placement;
mod rollout;

pub use app::{AppProfileSpec, CompositeAppSpec, DependencySpec, OpStatus};
pub use ca_cert::{
    Algorithm, CERT_MANAGER_GROUP, CaCertClusterGroupSpec, CaCertLogicalCloudSpec, CaCertSpec,
    CsrInfo, GroupScope, IssuerKind, IssuerRef, IssuingCluster, KeyUsage, PublicKeyAlgorithm,
};
use checking::{Scope, checked};
pub use checking::{read_body, read_spec};
pub use cluster_deployment::ClusterDeploymentSpec;
pub use controller::ControllerSpec;
pub use dig::{DigIntentSpec, DigSpec, GENERIC_PLACEMENT_KEY, OverrideValues, UNSET_INTENT_NAME};
pub use failover::{FAILOVER_KEY, FailoverIntentSpec, FailoverPolicy};
pub use kv_pairs::KvPairSpec;
pub use logical_cloud::{
    ClusterReferenceSpec, LogicalCloudSpec, LogicalCloudUser, QuotaSpec, UserPermissionSpec,
    fill_default_user,
};
pub use patterns::{
    LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, NAME_OR_EMPTY_PATTERN, NAME_PATTERN,
    NAMESPACE_OR_EMPTY_PATTERN, NAMESPACE_PATTERN, USER_NAME_PATTERN,
};
pub use placement::{AppIntentSpec, PlacementEntry, PlacementIntent};
pub use rollout::{GateRef, ROLLOUT_KEY, RolloutGroups, RolloutIntentSpec};
// Their old home, where other crates still find them.
pub use crate::kube_names::{check_dns_label, check_label};

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
        Kind::FailoverIntent => checked::<FailoverIntentSpec>(spec, &scope),
        Kind::RolloutIntent => checked::<RolloutIntentSpec>(spec, &scope),
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
        Kind::ClusterDeployment => checked::<ClusterDeploymentSpec>(spec, &scope),
        Kind::Machine => {
            read_spec::<crate::eggo::eggops::MachineSpec>(spec)?.check()?;
            Ok(Vec::new())
        }
        Kind::Infrastructure => {
            // Relative archive paths are the server's to place; the rest
            // must read as a deploy file's `install` and `open-ports`.
            read_spec::<crate::eggo::eggops::InfrastructureSpec>(spec)?.deploy_parts("/")?;
            Ok(Vec::new())
        }
        Kind::ClusterProvider
        | Kind::Cluster
        | Kind::MachineLogin
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
