//! Logical clouds (EMCO's dcm): a namespace, a Role, a RoleBinding for a
//! user and a ResourceQuota in every referenced cluster, and for each
//! cluster a kubeconfig whose client certificate comes from that cluster's
//! CA. They travel to the clusters the way an app does: as a one-app
//! context handed to rsync, so status, retries and resume come with it.
//!
//! An admin cloud (EMCO's level 0) uses the clusters' own kubeconfigs and
//! makes nothing on them: its context places an empty app on them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::cloud::{
    CONTEXT_COMPOSITE_APP, CSR_KIND, KUBECONFIG_SECRET, USER_CSR_SECRET, USER_KEY_SECRET,
};
use wasmco_core::resource::Resource;
use wasmco_core::specs::{ClusterReferenceSpec, LogicalCloudSpec, QuotaSpec, UserPermissionSpec};
use wasmco_core::tenancy::{POD_SECURITY_LABEL, PodSecurity};
use wasmco_core::wire::CloudAction;
use wasmco_runtime::contract::{PlaceApp, PlacementEdit};
use wasmco_store::appcontext::{self as stored, Access, ContextMeta, DeployState, DigState};
use wasmco_store::db::ResourceId;

use super::deploy::Orchestrator;
use super::dig::OrchestratorError;
use super::locks::TargetGuard;
use super::tenancy::Actor;
use crate::draft::{AppDraft, ClusterInfo, DraftContext};

/// The app of a logical cloud's context that makes its namespace and roles.
pub(crate) const CLOUD_APP: &str = "logical-cloud";
/// The app carrying the user's certificate request to clusters that sign it.
const USER_APP: &str = "user-certificate";

/// A logical cloud: `/projects/{project}/logical-clouds/{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogicalCloudRef {
    /// Its project.
    pub project: String,
    /// Its name.
    pub name: String,
}

impl LogicalCloudRef {
    /// Its resource id.
    pub fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::LogicalCloud,
            vec![self.project.clone(), self.name.clone()],
        )
    }

    /// Its key in the context store: no DIG's key starts with it.
    pub fn key(&self) -> String {
        format!("{}/{CONTEXT_COMPOSITE_APP}/{}", self.project, self.name)
    }

    fn describe(&self) -> String {
        format!("logical cloud {}/{}", self.project, self.name)
    }

    /// The path its children live under.
    fn path(&self) -> Vec<String> {
        vec![self.project.clone(), self.name.clone()]
    }

    /// The name of a cluster-scoped object it makes.
    fn cluster_wide_name(&self, what: &str) -> String {
        wasmco_core::cloud::cloud_object_name(&self.project, &self.name, what)
    }
}

impl Orchestrator {
    /// Created or Terminated -> Instantiated: gets the user a certificate
    /// on every referenced cluster and hands the namespace, roles and
    /// quota to rsync.
    ///
    /// A cluster with a CA in the store gets the certificate from it now.
    /// Any other signs it itself, as EMCO has it: the context carries the
    /// user's CertificateSigningRequest there, rsync approves it and keeps
    /// the certificate the cluster issues as the user's kubeconfig.
    pub fn instantiate_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&lc.key(), &lc.id())?;
        let next = Self::allow(&lc.describe(), &state, CloudAction::Instantiate)?;
        self.build_logical_cloud(lc, state, next, actor, &guard)
    }

    /// Instantiated or Updated -> Updated: the cloud as its references,
    /// permissions and quotas are now (a cluster added or dropped, say).
    pub fn update_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&lc.key(), &lc.id())?;
        let next = Self::allow(&lc.describe(), &state, CloudAction::Update)?;
        self.build_logical_cloud(lc, state, next, actor, &guard)
    }

    /// Tells rsync to stop working on the cloud (see [`Self::stop`]).
    pub fn stop_logical_cloud(&self, lc: &LogicalCloudRef) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&lc.key(), &lc.id())?;
        self.mark(CloudAction::Stop, &lc.describe(), &lc.key(), state, &guard)
    }

    /// Makes the cloud's context and enters `next` with it; a project's
    /// member's cloud is checked against its tenancy rules first.
    fn build_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
        mut state: DigState,
        next: DeployState,
        actor: Actor,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let spec: LogicalCloudSpec = self.db.spec(&lc.id())?;
        let permissions: Vec<UserPermissionSpec> = self
            .db
            .list_specs(Kind::LogicalCloudUserPermission, &lc.path())?
            .into_iter()
            .map(|(_, permission)| permission)
            .collect();
        if actor == Actor::Tenant {
            self.check_cloud(lc, &spec, &permissions)?;
        }
        let references = self.logical_cloud_clusters(lc)?;
        if references.is_empty() {
            return Err(OrchestratorError::Input(format!(
                "{} references no cluster; add one under …/cluster-references",
                lc.describe()
            )));
        }
        if !spec.is_admin() {
            self.hold_namespace(lc, &spec.namespace)?;
        }
        let mut clusters = Vec::new();
        let mut kubeconfigs = Vec::new();
        let mut signed_by_cluster = Vec::new();
        for (index, (reference, target)) in references.iter().enumerate() {
            // An admin cloud uses the clusters' own kubeconfigs.
            if !spec.is_admin() {
                match self.kubeconfig_from_stored_ca(&spec, target)? {
                    Some(kubeconfig) => kubeconfigs.push((reference.clone(), kubeconfig)),
                    None => signed_by_cluster.push(index as u32),
                }
            }
            clusters.push(ClusterInfo {
                provider: target.cluster_provider.clone(),
                name: target.cluster.clone(),
                labels: Vec::new(),
                kv: Vec::new(),
            });
        }
        // An admin cloud makes nothing on its clusters: instantiating it
        // marks them as usable.
        let resources = if spec.is_admin() {
            Vec::new()
        } else {
            // A project's member's cloud enforces its policy's Pod Security
            // level; the admin's, whatever the namespace says.
            let pod_security = match actor {
                Actor::Tenant => {
                    let providers = references
                        .iter()
                        .map(|(_, target)| target.cluster_provider.as_str())
                        .collect();
                    Some(self.pod_security(&lc.project, &providers)?)
                }
                Actor::Admin => None,
            };
            self.manifests(lc, &spec, permissions, pod_security)?
        };
        let mut apps = vec![AppDraft::new(CLOUD_APP, resources)];
        let mut placements = vec![PlacementEdit::Place(PlaceApp {
            app: CLOUD_APP.to_owned(),
            clusters: (0..references.len() as u32).collect(),
            group: None,
        })];
        if !signed_by_cluster.is_empty() {
            apps.push(AppDraft::new(
                USER_APP,
                vec![self.user_certificate_request(lc, &spec)?],
            ));
            placements.push(PlacementEdit::Place(PlaceApp {
                app: USER_APP.to_owned(),
                clusters: signed_by_cluster,
                group: None,
            }));
        }
        let app_order = apps.iter().map(|a| a.name.clone()).collect();
        let mut draft = DraftContext::new(apps, clusters);
        draft
            .apply_placement(&placements)
            .map_err(|e| OrchestratorError::Input(e.reason))?;
        draft.settle_placement();
        let revision = state.latest + 1;
        let meta = ContextMeta {
            project: lc.project.clone(),
            composite_app: CONTEXT_COMPOSITE_APP.into(),
            composite_app_version: String::new(),
            deployment_intent_group: lc.name.clone(),
            release: String::new(),
            revision,
            created: stored::now(),
            app_order,
            dependencies: BTreeMap::new(),
            // Its own objects (namespace, roles) need the cluster's rights.
            access: Access::default(),
            adopt_from: None,
            confinement: None,
            service_mirrors: Vec::new(),
        };
        state.enter(next, revision);
        self.contexts.write(
            &lc.key(),
            &meta,
            &draft.into_stored(),
            &state,
            guard.fence(),
        )?;
        for (reference, kubeconfig) in kubeconfigs {
            self.db
                .put_secret(&reference, KUBECONFIG_SECRET, kubeconfig.as_bytes())?;
        }
        self.sync.changed(&lc.key());
        Ok(state)
    }

    /// The cloud's cluster references, by id.
    pub(crate) fn logical_cloud_clusters(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<Vec<(ResourceId, ClusterReferenceSpec)>, OrchestratorError> {
        Ok(self
            .db
            .list_specs(Kind::LogicalCloudClusterReference, &lc.path())?)
    }

    /// A kubeconfig for the logical cloud's user on `target`, with a client
    /// certificate from that cluster's stored CA; `None` when it has none.
    fn kubeconfig_from_stored_ca(
        &self,
        spec: &LogicalCloudSpec,
        target: &ClusterReferenceSpec,
    ) -> Result<Option<String>, OrchestratorError> {
        let cluster = ResourceId::new(
            Kind::Cluster,
            vec![target.cluster_provider.clone(), target.cluster.clone()],
        );
        let Some(pki) = crate::cluster_pki::load(&self.db, &cluster)? else {
            return Ok(None);
        };
        let user = spec.user_name();
        let kubeconfig = self.cluster_kubeconfig(&cluster)?;
        let certificate = pki
            .client(user, &[])
            .map_err(|e| OrchestratorError::Input(e.to_string()))?;
        Ok(Some(kubeconfig.for_user(
            &target.cluster,
            user,
            &certificate,
            &spec.namespace,
        )))
    }

    /// The user's CertificateSigningRequest, for the clusters that sign
    /// it themselves. Its key and request are made once and kept.
    fn user_certificate_request(
        &self,
        lc: &LogicalCloudRef,
        spec: &LogicalCloudSpec,
    ) -> Result<Resource, OrchestratorError> {
        let id = lc.id();
        let pki = |e: wasmco_pki::PkiError| OrchestratorError::Input(e.to_string());
        let request = match self.db.secret(&id, USER_CSR_SECRET)? {
            Some(request) => String::from_utf8_lossy(&request).into_owned(),
            None => {
                let key = wasmco_pki::new_key().map_err(pki)?;
                let request = wasmco_pki::client_csr(spec.user_name(), &key).map_err(pki)?;
                self.db.put_secret(&id, USER_KEY_SECRET, key.as_bytes())?;
                self.db
                    .put_secret(&id, USER_CSR_SECRET, request.as_bytes())?;
                request
            }
        };
        use base64::Engine;
        let manifest = json!({
            "apiVersion": "certificates.k8s.io/v1",
            "kind": CSR_KIND,
            "metadata": {"name": lc.cluster_wide_name("user-csr")},
            "spec": {
                "request": base64::engine::general_purpose::STANDARD.encode(request),
                "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["digital signature", "key encipherment", "client auth"],
            },
        });
        Resource::from_manifest(manifest)
            .map_err(|e| OrchestratorError::Input(format!("{}: {e}", lc.describe())))
    }

    /// Instantiated -> Terminated: rsync removes what the logical cloud made.
    /// Refused while a DIG deployed in it relies on its namespace and user.
    pub fn terminate_logical_cloud(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<DigState, OrchestratorError> {
        let (guard, state) = self.begin_at(&lc.key(), &lc.id())?;
        let users = self.digs_in(lc)?;
        if !users.is_empty() {
            return Err(OrchestratorError::Conflict(format!(
                "{} is used by deployment intent group {}; terminate {} first",
                lc.describe(),
                users.join(", "),
                if users.len() == 1 { "it" } else { "them" }
            )));
        }
        self.mark(
            CloudAction::Terminate,
            &lc.describe(),
            &lc.key(),
            state,
            &guard,
        )
    }

    /// The project's DIGs deployed (or stopped while deployed) in `lc`.
    fn digs_in(&self, lc: &LogicalCloudRef) -> Result<Vec<String>, OrchestratorError> {
        let mut users = Vec::new();
        let digs = self.db.list_under(
            Kind::DeploymentIntentGroup,
            std::slice::from_ref(&lc.project),
        )?;
        for (id, body) in digs {
            if body["spec"]["logicalCloud"].as_str() != Some(lc.name.as_str()) {
                continue;
            }
            let dig = super::dig::DigRef::from_path(&id.path);
            let state = self.contexts.state(&dig.key())?.state;
            if state.is_deployed() || state == DeployState::InstantiateStopped {
                users.push(dig.key());
            }
        }
        Ok(users)
    }

    /// Refuses a change of a deployed cloud's level, namespace or user: its
    /// DIGs and their checks rely on them until it is terminated.
    pub fn check_cloud_edit(
        &self,
        lc: &LogicalCloudRef,
        edited: &LogicalCloudSpec,
    ) -> Result<(), OrchestratorError> {
        let state = self.contexts.state(&lc.key())?.state;
        if matches!(state, DeployState::Created | DeployState::Terminated) {
            return Ok(());
        }
        let stored: LogicalCloudSpec = self.db.spec(&lc.id())?;
        let changed = [
            (stored.is_admin() != edited.is_admin(), "spec.level"),
            (stored.namespace != edited.namespace, "spec.namespace"),
            (
                stored.user_name() != edited.user_name(),
                "spec.user.userName",
            ),
        ];
        match changed.iter().find(|(changed, _)| *changed) {
            None => Ok(()),
            Some((_, field)) => Err(OrchestratorError::Conflict(format!(
                "{} is {state}: its {field} cannot change until it is terminated",
                lc.describe()
            ))),
        }
    }

    /// The logical cloud's state and what rsync did with its context.
    pub fn logical_cloud_status(
        &self,
        lc: &LogicalCloudRef,
    ) -> Result<(DigState, Option<super::deploy::SyncedContext>), OrchestratorError> {
        self.db.get(&lc.id())?;
        self.synced(&lc.key())
    }

    /// Refuses to let a deployed logical cloud be deleted; forgets the
    /// context of one that may be.
    pub fn release_logical_cloud(&self, lc: &LogicalCloudRef) -> Result<(), OrchestratorError> {
        let state = self.contexts.state(&lc.key())?;
        if state.state.is_deployed() {
            return Err(OrchestratorError::Deployed(format!(
                "{} is {}; terminate it before deleting it",
                lc.describe(),
                state.state
            )));
        }
        self.contexts.forget(&lc.key())?;
        self.let_go_namespaces(&lc.project, &lc.name)
    }

    /// A cluster's stored kubeconfig, checked.
    fn cluster_kubeconfig(
        &self,
        cluster: &ResourceId,
    ) -> Result<wasmco_pki::kubeconfig::CheckedKubeconfig, OrchestratorError> {
        let unusable =
            |reason: &str| OrchestratorError::Input(format!("{}: {reason}", cluster.describe()));
        let kubeconfig = self
            .db
            .file(cluster)?
            .ok_or_else(|| unusable("has no kubeconfig"))?;
        self.kubeconfigs
            .check(&kubeconfig)
            .map_err(|e| unusable(&format!("its kubeconfig is refused: {e}")))
    }

    /// Namespace, Role and RoleBinding (one pair per namespace the user's
    /// permissions name; a ClusterRole and ClusterRoleBinding for `""`, the
    /// whole cluster) and, when quotas are set, ResourceQuota.
    ///
    /// The admin's cloud takes over a namespace that is on a cluster
    /// already (and gives it back at terminate); a project's member's
    /// cloud does not, and its namespace enforces `pod_security`.
    fn manifests(
        &self,
        lc: &LogicalCloudRef,
        spec: &LogicalCloudSpec,
        permissions: Vec<UserPermissionSpec>,
        pod_security: Option<PodSecurity>,
    ) -> Result<Vec<Resource>, OrchestratorError> {
        let parent = lc.path();
        let namespace = &spec.namespace;
        // Rules by where they apply: the cloud's namespace, another one
        // (kube-system, say), or the whole cluster ("").
        let mut rules: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for permission in permissions {
            let target = permission
                .namespace
                .clone()
                .unwrap_or_else(|| namespace.clone());
            rules.entry(target).or_default().push(json!({
                "apiGroups": permission.api_groups,
                "resources": permission.resources,
                "verbs": permission.verbs,
            }));
        }
        if rules.is_empty() {
            // EMCO's default for a logical cloud's user: everything in its namespace.
            rules.insert(
                namespace.clone(),
                vec![json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})],
            );
        }
        let mut hard = serde_json::Map::new();
        let quotas: Vec<(ResourceId, QuotaSpec)> =
            self.db.list_specs(Kind::LogicalCloudQuota, &parent)?;
        for (_, QuotaSpec(quota)) in quotas {
            hard.extend(quota);
        }
        let name = &lc.name;
        let subjects = json!([{"kind": "User", "name": spec.user_name(),
                               "apiGroup": "rbac.authorization.k8s.io"}]);
        let mut namespace_manifest =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let metadata = &mut namespace_manifest["metadata"];
        match pod_security {
            Some(level) => {
                // Kubernetes' own labels (its Pod Security level among
                // them) are the policy's and the cluster's, not the spec's.
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
        let mut manifests = vec![namespace_manifest];
        for (target, rules) in rules {
            if target.is_empty() {
                let role = lc.cluster_wide_name("clusterrole");
                manifests.push(
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": role}, "rules": rules}),
                );
                manifests.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": lc.cluster_wide_name("clusterrolebinding")},
                    "subjects": subjects,
                    "roleRef": {"kind": "ClusterRole", "name": role, "apiGroup": "rbac.authorization.k8s.io"}}));
                continue;
            }
            let prefix = if &target == namespace {
                name.clone()
            } else {
                format!("{name}-{target}")
            };
            let role = format!("{prefix}-role");
            manifests.push(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": role, "namespace": target}, "rules": rules}),
            );
            manifests.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": format!("{prefix}-rolebinding"), "namespace": target},
                "subjects": subjects,
                "roleRef": {"kind": "Role", "name": role, "apiGroup": "rbac.authorization.k8s.io"}}));
        }
        if !hard.is_empty() {
            manifests.push(json!({"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": format!("{name}-quota"), "namespace": namespace},
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
