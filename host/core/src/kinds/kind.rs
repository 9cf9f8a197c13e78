//! The kinds themselves, and what sets some apart.

/// Every resource the REST API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `/cluster-providers/{clusterProvider}`
    ClusterProvider,
    /// `…/clusters/{cluster}` (multipart, with a kubeconfig)
    Cluster,
    /// `…/clusters/{cluster}/labels/{clusterLabel}`
    ClusterLabel,
    /// `…/clusters/{cluster}/kv-pairs/{kvPair}`
    ClusterKvPair,
    /// `/controllers/{controller}` (multipart, with a `.wasm` component)
    Controller,
    /// `/projects/{project}`
    Project,
    /// `…/composite-apps/{compositeApp}/{compositeAppVersion}`
    CompositeApp,
    /// `…/apps/{app}` (multipart, with manifests)
    App,
    /// `…/apps/{app}/dependency/{dependency}`
    AppDependency,
    /// `…/composite-profiles/{compositeProfile}`
    CompositeProfile,
    /// `…/composite-profiles/{compositeProfile}/profiles/{profile}` (multipart)
    AppProfile,
    /// `…/deployment-intent-groups/{deploymentIntentGroup}`
    DeploymentIntentGroup,
    /// `…/deployment-intent-groups/{dig}/intents/{intent}`
    DigIntent,
    /// `…/deployment-intent-groups/{dig}/generic-placement-intents/{gpi}`
    GenericPlacementIntent,
    /// `…/deployment-intent-groups/{dig}/failover-intents/{failoverIntent}`:
    /// what happens when a placed cluster stays unreachable.
    FailoverIntent,
    /// `…/deployment-intent-groups/{dig}/rollout-intents/{rolloutIntent}`:
    /// its instantiates and updates go a group of clusters at a time.
    RolloutIntent,
    /// `…/generic-placement-intents/{gpi}/app-intents/{appIntent}`
    GenericAppIntent,
    /// `…/deployment-intent-groups/{dig}/controller-intents/{controllerIntent}`:
    /// the intent document a DIG intent hands to a controller (its `spec`).
    ControllerIntent,
    /// `/projects/{project}/logical-clouds/{logicalCloud}`: a namespace and
    /// a user stretched across clusters (EMCO's dcm).
    LogicalCloud,
    /// `…/logical-clouds/{lc}/cluster-references/{clusterReference}`
    LogicalCloudClusterReference,
    /// `…/logical-clouds/{lc}/user-permissions/{userPermission}`
    LogicalCloudUserPermission,
    /// `…/logical-clouds/{lc}/cluster-quotas/{clusterQuota}`
    LogicalCloudQuota,
    /// `…/logical-clouds/{logicalCloud}/kv-pairs/{logicalCloudKv}`
    LogicalCloudKvPair,
    /// `/cluster-providers/{clusterProvider}/ca-certs/{caCert}`: an
    /// intermediate CA for each of a set of the provider's clusters
    /// (EMCO's ca-certs).
    CaCert,
    /// `…/ca-certs/{caCert}/clusters/{caCertClusterGroup}`: which clusters.
    CaCertClusterGroup,
    /// `/projects/{project}/ca-certs/{caCert}`: the same for the clusters of
    /// the project's logical clouds.
    ProjectCaCert,
    /// `…/ca-certs/{caCert}/logical-clouds/{caCertLogicalCloud}`
    CaCertLogicalCloud,
    /// `…/logical-clouds/{caCertLogicalCloud}/clusters/{caCertClusterGroup}`
    CaCertLcClusterGroup,
    /// `…/clusters/{cluster}/networks/{network}`: EMCO's network intent.
    ClusterNetwork,
    /// `…/clusters/{cluster}/provider-networks/{providerNetwork}`.
    ClusterProviderNetwork,
    /// `/cluster-providers/{clusterProvider}/cluster-deployments/{clusterDeployment}`
    /// (multipart, with an Eggo deploy file): a cluster wasmco makes on
    /// machines over SSH and then registers under the provider.
    ClusterDeployment,
    /// `/cluster-providers/{clusterProvider}/machines/{machine}`: a machine
    /// registered once for clusters requested by requirements to be made
    /// on (Eggops' `Machine`).
    Machine,
    /// `/cluster-providers/{clusterProvider}/machine-logins/{machineLogin}`
    /// (multipart, with Eggops' login `Secret`): how the provider's
    /// machines are logged in to, sealed at rest.
    MachineLogin,
    /// `/cluster-providers/{clusterProvider}/infrastructures/{infrastructure}`:
    /// what requested clusters' machines are installed with (Eggops'
    /// `Infrastructure`).
    Infrastructure,
    /// `/projects/{project}/tenancy-policies/{tenancyPolicy}`: what the
    /// admin lets the project's deployments put on the clusters.
    TenancyPolicy,
    /// `/cluster-providers/{clusterProvider}/tenancy-policies/{tenancyPolicy}`:
    /// the same for every project without its own, on the provider's clusters.
    ProviderTenancyPolicy,
    /// `…/deployment-intent-groups/{dig}/<segment>/{name}[/<segment>/{name}…]`:
    /// an intent of a kind a controller declares (see [`crate::intents`]);
    /// its path holds the segments, so it has no route of its own here.
    Intent,
}

impl Kind {
    /// Every kind, parents before children.
    pub const ALL: [Kind; 37] = [
        Kind::ClusterProvider,
        Kind::Cluster,
        Kind::ClusterLabel,
        Kind::ClusterKvPair,
        Kind::ClusterNetwork,
        Kind::ClusterProviderNetwork,
        Kind::Machine,
        Kind::MachineLogin,
        Kind::Infrastructure,
        Kind::ClusterDeployment,
        Kind::CaCert,
        Kind::CaCertClusterGroup,
        Kind::Controller,
        Kind::Project,
        // Before the provider's, which shares its segment: the word
        // `tenancy-policies` means the project's.
        Kind::TenancyPolicy,
        Kind::ProviderTenancyPolicy,
        Kind::CompositeApp,
        Kind::App,
        Kind::AppDependency,
        Kind::CompositeProfile,
        Kind::AppProfile,
        Kind::DeploymentIntentGroup,
        Kind::DigIntent,
        Kind::GenericPlacementIntent,
        Kind::GenericAppIntent,
        Kind::FailoverIntent,
        Kind::RolloutIntent,
        Kind::ControllerIntent,
        Kind::LogicalCloud,
        Kind::LogicalCloudClusterReference,
        Kind::LogicalCloudUserPermission,
        Kind::LogicalCloudQuota,
        Kind::LogicalCloudKvPair,
        Kind::ProjectCaCert,
        Kind::CaCertLogicalCloud,
        Kind::CaCertLcClusterGroup,
        Kind::Intent,
    ];

    /// Its routes come from the controllers' declarations, not the table.
    pub fn is_declared(self) -> bool {
        self == Kind::Intent
    }

    /// Key-value pairs, which EMCO reads one key of with `?key=`.
    pub fn is_kv_pairs(self) -> bool {
        matches!(self, Kind::ClusterKvPair | Kind::LogicalCloudKvPair)
    }

    /// Its file holds credentials (a cluster's kubeconfig, a deploy file's
    /// logins): sealed at rest.
    pub fn file_is_secret(self) -> bool {
        matches!(
            self,
            Kind::Cluster | Kind::ClusterDeployment | Kind::MachineLogin
        )
    }

    /// The composite app is named by name and version (two path segments).
    pub fn is_versioned(self) -> bool {
        self == Kind::CompositeApp
    }
}
