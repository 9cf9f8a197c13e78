//! Building a logical cloud's context: its user's credentials on each
//! referenced cluster (signed now by a stored CA, else asked of the
//! cluster), its namespace, roles and quota, placed on those clusters.

use std::sync::Arc;

use serde_json::json;

use wasmco_core::Kind;
use wasmco_core::cloud::{
    CONTEXT_COMPOSITE_APP, CSR_KIND, KUBECONFIG_SECRET, USER_CSR_SECRET, USER_KEY_SECRET,
};
use wasmco_core::resource::Resource;
use wasmco_core::specs::{ClusterReferenceSpec, LogicalCloudSpec, UserPermissionSpec};
use wasmco_pki::kubeconfig::{CheckedKubeconfig, KubeconfigPolicy};
use wasmco_runtime::contract::{PlaceApp, PlacementEdit};
use wasmco_store::appcontext::{DeployState, DigState};
use wasmco_store::db::ResourceId;

use super::manifests::manifests;
use crate::draft::{AppDraft, ClusterInfo, DraftContext};
use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::shared::{Shared, own_meta};
use crate::target::{CLOUD_APP, LogicalCloudRef};
use crate::tenancy::{Actor, Tenancy};

/// The app carrying the user's certificate request to clusters that sign it.
const USER_APP: &str = "user-certificate";

/// One build of one cloud's context, for `actor`.
pub(super) struct CloudBuild<'a> {
    pub(super) shared: &'a Shared,
    /// What a cluster's kubeconfig may ask of this host.
    pub(super) kubeconfigs: &'a Arc<KubeconfigPolicy>,
    pub(super) lc: &'a LogicalCloudRef,
    pub(super) actor: Actor,
}

/// The user's credentials on the cloud's clusters.
#[derive(Default)]
struct Credentials {
    /// The referenced clusters, in reference order.
    clusters: Vec<ClusterInfo>,
    /// A kubeconfig for each reference whose cluster's CA is stored.
    kubeconfigs: Vec<(ResourceId, String)>,
    /// The indices of the clusters that sign the user's request themselves.
    signed_by_cluster: Vec<u32>,
}

impl CloudBuild<'_> {
    /// Makes the cloud's context and enters `next` with it; a project's
    /// member's cloud is checked against its tenancy rules first.
    pub(super) fn run(
        &self,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let lc = self.lc;
        let db = &self.shared.db;
        let spec: LogicalCloudSpec = db.spec(&lc.id())?;
        let permissions: Vec<UserPermissionSpec> = db
            .list_specs(Kind::LogicalCloudUserPermission, &lc.path())?
            .into_iter()
            .map(|(_, permission)| permission)
            .collect();
        if self.actor == Actor::Tenant {
            Tenancy::of(self.shared).check_cloud(lc, &spec, &permissions)?;
        }
        let references = lc.cluster_references(db)?;
        if references.is_empty() {
            return Err(OrchestratorError::Input(format!(
                "{} references no cluster; add one under …/cluster-references",
                lc.describe()
            )));
        }
        if !spec.is_admin() {
            Tenancy::of(self.shared).hold_namespace(lc, &spec.namespace)?;
        }
        let credentials = self.credentials(&spec, &references)?;
        let resources = self.resources(&spec, permissions, &references)?;
        let (app_order, draft) = self.draft(
            &spec,
            resources,
            credentials.clusters,
            &credentials.signed_by_cluster,
        )?;
        let revision = state.latest + 1;
        let meta = own_meta(
            &lc.project,
            CONTEXT_COMPOSITE_APP,
            &lc.name,
            revision,
            app_order,
        );
        state.enter(next, revision);
        self.shared.contexts.write(
            &lc.key(),
            &meta,
            &draft.into_stored(),
            &state,
            guard.fence(),
        )?;
        for (reference, kubeconfig) in credentials.kubeconfigs {
            db.put_secret(&reference, KUBECONFIG_SECRET, kubeconfig.as_bytes())?;
        }
        self.shared.sync.changed(&lc.key());
        Ok(state)
    }

    /// The user's kubeconfig on each referenced cluster with a stored CA,
    /// and which clusters sign its request themselves. An admin cloud
    /// uses the clusters' own kubeconfigs.
    fn credentials(
        &self,
        spec: &LogicalCloudSpec,
        references: &[(ResourceId, ClusterReferenceSpec)],
    ) -> Result<Credentials, OrchestratorError> {
        let mut credentials = Credentials::default();
        for (index, (reference, target)) in references.iter().enumerate() {
            if !spec.is_admin() {
                match self.kubeconfig_from_stored_ca(spec, target)? {
                    Some(kubeconfig) => credentials
                        .kubeconfigs
                        .push((reference.clone(), kubeconfig)),
                    None => credentials.signed_by_cluster.push(index as u32),
                }
            }
            credentials.clusters.push(ClusterInfo {
                provider: target.cluster_provider.clone(),
                name: target.cluster.clone(),
                labels: Vec::new(),
                kv: Vec::new(),
            });
        }
        Ok(credentials)
    }

    /// What the cloud makes on its clusters. An admin cloud makes nothing:
    /// instantiating it marks them as usable. A project's member's cloud
    /// enforces its policy's Pod Security level; the admin's, whatever
    /// the namespace says.
    fn resources(
        &self,
        spec: &LogicalCloudSpec,
        permissions: Vec<UserPermissionSpec>,
        references: &[(ResourceId, ClusterReferenceSpec)],
    ) -> Result<Vec<Resource>, OrchestratorError> {
        if spec.is_admin() {
            return Ok(Vec::new());
        }
        let pod_security = match self.actor {
            Actor::Tenant => {
                let providers = references
                    .iter()
                    .map(|(_, target)| target.cluster_provider.as_str())
                    .collect();
                Some(Tenancy::of(self.shared).pod_security(&self.lc.project, &providers)?)
            }
            Actor::Admin => None,
        };
        manifests(&self.shared.db, self.lc, spec, permissions, pod_security)
    }

    /// The cloud's app on every referenced cluster and, for the clusters
    /// that sign the user's request themselves, the request's; with their
    /// order.
    fn draft(
        &self,
        spec: &LogicalCloudSpec,
        resources: Vec<Resource>,
        clusters: Vec<ClusterInfo>,
        signed_by_cluster: &[u32],
    ) -> Result<(Vec<String>, DraftContext), OrchestratorError> {
        let mut apps = vec![AppDraft::new(CLOUD_APP, resources)];
        let mut placements = vec![PlacementEdit::Place(PlaceApp {
            app: CLOUD_APP.to_owned(),
            clusters: (0..clusters.len() as u32).collect(),
            group: None,
        })];
        if !signed_by_cluster.is_empty() {
            apps.push(AppDraft::new(
                USER_APP,
                vec![self.user_certificate_request(spec)?],
            ));
            placements.push(PlacementEdit::Place(PlaceApp {
                app: USER_APP.to_owned(),
                clusters: signed_by_cluster.to_vec(),
                group: None,
            }));
        }
        let app_order = apps.iter().map(|a| a.name.clone()).collect();
        let mut draft = DraftContext::new(apps, clusters);
        draft
            .apply_placement(&placements)
            .map_err(|e| OrchestratorError::Input(e.reason))?;
        draft.settle_placement();
        Ok((app_order, draft))
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
        let Some(pki) = crate::cluster_pki::load(&self.shared.db, &cluster)? else {
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

    /// A cluster's stored kubeconfig, checked.
    fn cluster_kubeconfig(
        &self,
        cluster: &ResourceId,
    ) -> Result<CheckedKubeconfig, OrchestratorError> {
        let unusable =
            |reason: &str| OrchestratorError::Input(format!("{}: {reason}", cluster.describe()));
        let kubeconfig = self
            .shared
            .db
            .file(cluster)?
            .ok_or_else(|| unusable("has no kubeconfig"))?;
        self.kubeconfigs
            .check(&kubeconfig)
            .map_err(|e| unusable(&format!("its kubeconfig is refused: {e}")))
    }

    /// The user's CertificateSigningRequest, for the clusters that sign
    /// it themselves. Its key and request are made once and kept.
    fn user_certificate_request(
        &self,
        spec: &LogicalCloudSpec,
    ) -> Result<Resource, OrchestratorError> {
        let lc = self.lc;
        let db = &self.shared.db;
        let id = lc.id();
        let pki = |e: wasmco_pki::PkiError| OrchestratorError::Input(e.to_string());
        let request = match db.secret(&id, USER_CSR_SECRET)? {
            Some(request) => String::from_utf8_lossy(&request).into_owned(),
            None => {
                let key = wasmco_pki::new_key().map_err(pki)?;
                let request = wasmco_pki::client_csr(spec.user_name(), &key).map_err(pki)?;
                db.put_secret(&id, USER_KEY_SECRET, key.as_bytes())?;
                db.put_secret(&id, USER_CSR_SECRET, request.as_bytes())?;
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
}
