//! The resources of the API and where they live: one table drives the
//! routes, the store keys and the OpenAPI document.

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
    /// Every kind, parents before children.
    pub const ALL: [Kind; 31] = [
        Kind::ClusterProvider,
        Kind::Cluster,
        Kind::ClusterLabel,
        Kind::ClusterKvPair,
        Kind::ClusterNetwork,
        Kind::ClusterProviderNetwork,
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

    /// Its routes come from the controllers' declarations, not this table.
    pub fn is_declared(self) -> bool {
        self == Kind::Intent
    }

    /// Key-value pairs, which EMCO reads one key of with `?key=`.
    pub fn is_kv_pairs(self) -> bool {
        matches!(self, Kind::ClusterKvPair | Kind::LogicalCloudKvPair)
    }

    /// Its file holds credentials (a cluster's kubeconfig): sealed at rest.
    pub fn file_is_secret(self) -> bool {
        self == Kind::Cluster
    }

    /// The composite app is named by name and version (two path segments).
    pub fn is_versioned(self) -> bool {
        self == Kind::CompositeApp
    }

    /// Its ancestors, outermost first.
    pub fn ancestors(self) -> Vec<Kind> {
        let mut chain = Vec::new();
        let mut next = self.info().parent;
        while let Some(kind) = next {
            chain.push(kind);
            next = kind.info().parent;
        }
        chain.reverse();
        chain
    }

    /// Its path parameters: one per ancestor segment, then its own.
    pub fn own_params(self) -> Vec<&'static str> {
        if self.is_versioned() {
            vec![self.info().param, "compositeAppVersion"]
        } else {
            vec![self.info().param]
        }
    }

    /// The axum route of its collection, e.g. `/v2/cluster-providers/{clusterProvider}/clusters`.
    pub fn collection_route(self) -> String {
        let parent = match self.info().parent {
            Some(parent) => parent.item_route(),
            None => "/v2".to_owned(),
        };
        format!("{parent}/{}", self.info().segment)
    }

    /// The axum route of one item.
    pub fn item_route(self) -> String {
        let mut route = self.collection_route();
        for param in self.own_params() {
            route.push_str("/{");
            route.push_str(param);
            route.push('}');
        }
        route
    }

    /// The kind whose collection (`item == false`) or item route `path`
    /// (relative to `/v2`, e.g. `projects/p/composite-apps`) is.
    pub fn from_path(path: &str, item: bool) -> Option<Kind> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        Kind::ALL
            .into_iter()
            .filter(|k| !k.is_declared())
            .find(|kind| {
                let route = if item {
                    kind.item_route()
                } else {
                    kind.collection_route()
                };
                let pattern: Vec<&str> = route.trim_start_matches("/v2/").split('/').collect();
                pattern.len() == segments.len()
                    && pattern
                        .iter()
                        .zip(&segments)
                        .all(|(p, s)| !s.is_empty() && (p.starts_with('{') || p == s))
            })
    }

    /// How many path values name its parent.
    pub fn parent_arity(self) -> usize {
        self.ancestors().iter().map(|k| k.own_params().len()).sum()
    }

    /// Kinds that live directly under this one.
    pub fn children(self) -> impl Iterator<Item = Kind> {
        Kind::ALL
            .into_iter()
            .filter(move |k| k.info().parent == Some(self))
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn routes_follow_emco() {
        assert_eq!(
            Kind::App.item_route(),
            "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/apps/{app}"
        );
        assert_eq!(
            Kind::ClusterLabel.collection_route(),
            "/v2/cluster-providers/{clusterProvider}/clusters/{cluster}/labels"
        );
        assert_eq!(Kind::GenericAppIntent.parent_arity(), 5);
        assert_eq!(
            Kind::from_path("projects/p/composite-apps", false),
            Some(Kind::CompositeApp)
        );
        assert_eq!(
            Kind::from_path("projects/p/composite-apps/ca/v1", true),
            Some(Kind::CompositeApp)
        );
        assert_eq!(
            Kind::from_path("cluster-providers/p/clusters/c/labels", false),
            Some(Kind::ClusterLabel)
        );
        assert_eq!(Kind::from_path("projects/p/networks", false), None);
    }
}
