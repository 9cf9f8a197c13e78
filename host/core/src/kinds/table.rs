//! The table: each kind's names, parent, body and limits.

use super::kind::Kind;

/// How a resource's create and update requests carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyShape {
    /// `{"metadata": {...}, "spec": {...}}` as JSON.
    Document,
    /// `{"clusterLabel": "edge"}` as JSON.
    Label,
    /// `multipart/form-data`: a `metadata` part with the document and a `file` part.
    Multipart(FileKind),
}

/// What the `file` part of a multipart resource holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A kubeconfig (YAML).
    Kubeconfig,
    /// A WebAssembly component.
    Component,
    /// Kubernetes manifests: multi-document YAML, or a `.tgz` of YAML files.
    Manifests,
    /// An app profile: YAML overrides.
    Profile,
    /// Eggo's deploy file (YAML), with the SSH key it logs in with.
    DeployFile,
    /// A `kubernetes.io/basic-auth` or `kubernetes.io/ssh-auth` Secret
    /// (YAML or JSON), as Eggops takes machine logins.
    MachineLogin,
}

/// What the table says about one kind.
#[derive(Debug)]
pub struct KindInfo {
    /// Singular, for messages: "cluster provider".
    pub title: &'static str,
    /// The key segment in the store.
    pub store_id: &'static str,
    /// The kind it lives under.
    pub parent: Option<Kind>,
    /// Its collection's URL segment.
    pub segment: &'static str,
    /// Its path parameter's name.
    pub param: &'static str,
    /// How requests carry it.
    pub body: BodyShape,
    /// Deleted with its parent instead of blocking the parent's deletion.
    pub owned_by_parent: bool,
    /// The largest create or update request accepted, in bytes.
    pub max_body: usize,
}

const JSON_LIMIT: usize = 1 << 20;
/// Largest controller upload.
pub const COMPONENT_LIMIT: usize = 64 << 20;
/// Largest app upload.
pub const MANIFESTS_LIMIT: usize = 32 << 20;

impl Kind {
    /// The kind's row of the table.
    pub fn info(self) -> &'static KindInfo {
        use BodyShape::*;
        macro_rules! kind {
            ($title:literal, $id:literal, $parent:expr, $segment:literal, $param:literal, $body:expr, $owned:literal, $max:expr) => {{
                const INFO: KindInfo = KindInfo {
                    title: $title,
                    store_id: $id,
                    parent: $parent,
                    segment: $segment,
                    param: $param,
                    body: $body,
                    owned_by_parent: $owned,
                    max_body: $max,
                };
                &INFO
            }};
        }
        match self {
            Kind::ClusterProvider => kind!(
                "cluster provider",
                "cluster-provider",
                None,
                "cluster-providers",
                "clusterProvider",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::Cluster => kind!(
                "cluster",
                "cluster",
                Some(Kind::ClusterProvider),
                "clusters",
                "cluster",
                Multipart(FileKind::Kubeconfig),
                false,
                JSON_LIMIT * 4
            ),
            Kind::ClusterLabel => kind!(
                "cluster label",
                "cluster-label",
                Some(Kind::Cluster),
                "labels",
                "clusterLabel",
                Label,
                true,
                JSON_LIMIT
            ),
            Kind::ClusterKvPair => kind!(
                "cluster kv-pair",
                "cluster-kv",
                Some(Kind::Cluster),
                "kv-pairs",
                "kvPair",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::Controller => kind!(
                "controller",
                "controller",
                None,
                "controllers",
                "controller",
                Multipart(FileKind::Component),
                false,
                COMPONENT_LIMIT
            ),
            Kind::Project => kind!(
                "project", "project", None, "projects", "project", Document, false, JSON_LIMIT
            ),
            Kind::CompositeApp => kind!(
                "composite app",
                "composite-app",
                Some(Kind::Project),
                "composite-apps",
                "compositeApp",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::App => kind!(
                "app",
                "app",
                Some(Kind::CompositeApp),
                "apps",
                "app",
                Multipart(FileKind::Manifests),
                false,
                MANIFESTS_LIMIT
            ),
            Kind::AppDependency => kind!(
                "app dependency",
                "app-dependency",
                Some(Kind::App),
                "dependency",
                "dependency",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::CompositeProfile => kind!(
                "composite profile",
                "composite-profile",
                Some(Kind::CompositeApp),
                "composite-profiles",
                "compositeProfile",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::AppProfile => kind!(
                "app profile",
                "app-profile",
                Some(Kind::CompositeProfile),
                "profiles",
                "profile",
                Multipart(FileKind::Profile),
                false,
                MANIFESTS_LIMIT
            ),
            Kind::DeploymentIntentGroup => kind!(
                "deployment intent group",
                "dig",
                Some(Kind::CompositeApp),
                "deployment-intent-groups",
                "deploymentIntentGroup",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::DigIntent => kind!(
                "deployment intent",
                "dig-intent",
                Some(Kind::DeploymentIntentGroup),
                "intents",
                "intent",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::GenericPlacementIntent => kind!(
                "generic placement intent",
                "gpi",
                Some(Kind::DeploymentIntentGroup),
                "generic-placement-intents",
                "genericPlacementIntent",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::FailoverIntent => kind!(
                "failover intent",
                "failover-intent",
                Some(Kind::DeploymentIntentGroup),
                "failover-intents",
                "failoverIntent",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::RolloutIntent => kind!(
                "rollout intent",
                "rollout-intent",
                Some(Kind::DeploymentIntentGroup),
                "rollout-intents",
                "rolloutIntent",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::GenericAppIntent => kind!(
                "generic app intent",
                "gpi-app-intent",
                Some(Kind::GenericPlacementIntent),
                "app-intents",
                "appIntent",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::ControllerIntent => kind!(
                "controller intent",
                "controller-intent",
                Some(Kind::DeploymentIntentGroup),
                "controller-intents",
                "controllerIntent",
                Document,
                false,
                JSON_LIMIT * 4
            ),
            Kind::LogicalCloud => kind!(
                "logical cloud",
                "logical-cloud",
                Some(Kind::Project),
                "logical-clouds",
                "logicalCloud",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::LogicalCloudClusterReference => kind!(
                "logical cloud cluster reference",
                "lc-cluster",
                Some(Kind::LogicalCloud),
                "cluster-references",
                "clusterReference",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::LogicalCloudUserPermission => kind!(
                "logical cloud user permission",
                "lc-permission",
                Some(Kind::LogicalCloud),
                "user-permissions",
                "userPermission",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::LogicalCloudQuota => kind!(
                "logical cloud cluster quota",
                "lc-quota",
                Some(Kind::LogicalCloud),
                "cluster-quotas",
                "clusterQuota",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::ClusterNetwork => kind!(
                "cluster network",
                "network",
                Some(Kind::Cluster),
                "networks",
                "network",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::ClusterProviderNetwork => kind!(
                "cluster provider network",
                "provider-network",
                Some(Kind::Cluster),
                "provider-networks",
                "providerNetwork",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::ClusterDeployment => kind!(
                "cluster deployment",
                "cluster-deployment",
                Some(Kind::ClusterProvider),
                "cluster-deployments",
                "clusterDeployment",
                Multipart(FileKind::DeployFile),
                false,
                JSON_LIMIT
            ),
            Kind::Machine => kind!(
                "machine",
                "machine",
                Some(Kind::ClusterProvider),
                "machines",
                "machine",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::MachineLogin => kind!(
                "machine login",
                "machine-login",
                Some(Kind::ClusterProvider),
                "machine-logins",
                "machineLogin",
                Multipart(FileKind::MachineLogin),
                true,
                JSON_LIMIT
            ),
            Kind::Infrastructure => kind!(
                "infrastructure",
                "infrastructure",
                Some(Kind::ClusterProvider),
                "infrastructures",
                "infrastructure",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::LogicalCloudKvPair => kind!(
                "logical cloud kv-pair",
                "lc-kv",
                Some(Kind::LogicalCloud),
                "kv-pairs",
                "logicalCloudKv",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::TenancyPolicy => kind!(
                "tenancy policy",
                "tenancy-policy",
                Some(Kind::Project),
                "tenancy-policies",
                "tenancyPolicy",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::ProviderTenancyPolicy => kind!(
                "cluster provider tenancy policy",
                "provider-tenancy-policy",
                Some(Kind::ClusterProvider),
                "tenancy-policies",
                "tenancyPolicy",
                Document,
                true,
                JSON_LIMIT
            ),
            Kind::CaCert => kind!(
                "cluster provider ca cert",
                "ca-cert",
                Some(Kind::ClusterProvider),
                "ca-certs",
                "caCert",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::CaCertClusterGroup => kind!(
                "ca cert cluster group",
                "ca-cert-clusters",
                Some(Kind::CaCert),
                "clusters",
                "caCertClusterGroup",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::ProjectCaCert => kind!(
                "project ca cert",
                "project-ca-cert",
                Some(Kind::Project),
                "ca-certs",
                "caCert",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::CaCertLogicalCloud => kind!(
                "ca cert logical cloud",
                "ca-cert-lc",
                Some(Kind::ProjectCaCert),
                "logical-clouds",
                "caCertLogicalCloud",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::CaCertLcClusterGroup => kind!(
                "ca cert logical cloud cluster group",
                "ca-cert-lc-clusters",
                Some(Kind::CaCertLogicalCloud),
                "clusters",
                "caCertClusterGroup",
                Document,
                false,
                JSON_LIMIT
            ),
            Kind::Intent => kind!(
                "intent",
                "intent",
                Some(Kind::DeploymentIntentGroup),
                "",
                "intentPath",
                Document,
                false,
                JSON_LIMIT * 4
            ),
        }
    }
}
