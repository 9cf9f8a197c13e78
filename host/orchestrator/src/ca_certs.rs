//! EMCO's ca-certs: each cluster a caCert's groups name gets its own
//! intermediate CA, signed by a cert-manager CA issuer on the issuing
//! cluster, then that CA as a ClusterIssuer and as Istio's signer.
//!
//! Enrollment signs: wasmco reads the issuer's CA secret through the
//! issuing cluster's kubeconfig and signs each cluster's certificate
//! itself, where EMCO puts CertificateRequests on the issuing cluster and
//! waits for its cert-manager (the certificate is the same; nothing is left
//! there). The keys and certificates are sealed in the store.
//!
//! Distribution deploys: a one-app context, handed to rsync as a logical
//! cloud's is, gives each cluster the CA's Secret, a ClusterIssuer using
//! it, a KNCC ConfigCtrl adding it to Istio's mesh config, and (for a
//! project's caCert) a ProxyConfig naming it in each logical cloud's
//! namespace.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

use wasmco_core::resource::Resource;
use wasmco_core::specs::{CaCertClusterGroupSpec, CaCertLogicalCloudSpec, CaCertSpec, GroupScope};
use wasmco_core::specs::{ClusterReferenceSpec, LogicalCloudSpec};
use wasmco_core::wire::CertAction;
use wasmco_core::{ClusterRef, Kind};
use wasmco_pki::KeyedCert;
use wasmco_pki::ca_cert::{IssuerSecret, sign_for_cluster};
use wasmco_store::appcontext::{
    self as stored, Access, ContextMeta, DeployState, DigState, StoredApp,
};
use wasmco_store::db::ResourceId;

use super::deploy::{Orchestrator, SyncedContext};
use super::dig::OrchestratorError;
use super::locks::TargetGuard;
use super::tenancy::Actor;
use crate::draft::ClusterInfo;

/// The secret of a caCert holding what its enrollment signed.
const ENROLLED_SECRET: &str = "enrolled";

/// Where a caCert lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaCertScope {
    /// `/cluster-providers/{provider}/ca-certs`: the groups name the
    /// provider's clusters.
    Provider(String),
    /// `/projects/{project}/ca-certs`: the groups of each logical cloud,
    /// within that cloud's clusters.
    Project(String),
}

/// A caCert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaCertRef {
    /// Where it lives.
    pub scope: CaCertScope,
    /// Its name.
    pub name: String,
}

/// A caCert's two steps, each with its own state and context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertStage {
    /// Sign each cluster's certificate.
    Enrollment,
    /// Put it on the clusters.
    Distribution,
}

impl CertStage {
    /// Its route segment.
    pub fn route(self) -> &'static str {
        match self {
            CertStage::Enrollment => "enrollment",
            CertStage::Distribution => "distribution",
        }
    }

    /// The app of its context, as EMCO names it.
    fn app(self) -> &'static str {
        match self {
            CertStage::Enrollment => "cert-enrollment",
            CertStage::Distribution => "cert-distribution",
        }
    }
}

impl CaCertRef {
    /// Its resource id.
    pub fn id(&self) -> ResourceId {
        match &self.scope {
            CaCertScope::Provider(provider) => {
                ResourceId::new(Kind::CaCert, vec![provider.clone(), self.name.clone()])
            }
            CaCertScope::Project(project) => ResourceId::new(
                Kind::ProjectCaCert,
                vec![project.clone(), self.name.clone()],
            ),
        }
    }

    /// The key of one stage's context: `_` starts no composite app's name,
    /// so no DIG's, logical cloud's or other caCert's key is the same.
    pub fn key(&self, stage: CertStage) -> String {
        let (owner, marker) = match &self.scope {
            CaCertScope::Provider(provider) => (provider, "_provider-ca-certs"),
            CaCertScope::Project(project) => (project, "_ca-certs"),
        };
        format!("{owner}/{marker}/{}/{}", self.name, stage.route())
    }

    fn describe(&self, stage: CertStage) -> String {
        let (kind, owner) = match &self.scope {
            CaCertScope::Provider(provider) => ("cluster provider", provider),
            CaCertScope::Project(project) => ("project", project),
        };
        format!(
            "the {} of {kind} {owner}'s ca cert {}",
            stage.route(),
            self.name
        )
    }

    /// The prefix of the names of what it puts on a cluster: EMCO's
    /// `<cert>-<provider>-<cluster>`, after a short hash of its key so that
    /// a project's caCert and a provider's of the same name stay apart.
    fn object_base(&self, target: &Target) -> String {
        let hash = wasmco_core::cloud::owner_label(&self.key(CertStage::Distribution));
        let base = format!(
            "{}-{}-{}-{}",
            &hash[..8],
            self.name,
            target.provider,
            target.cluster
        )
        .to_ascii_lowercase()
        .replace('_', "-");
        // Room for the longest suffix within a DNS subdomain's 253.
        if base.len() <= 180 {
            base
        } else {
            let tail = wasmco_core::cloud::owner_label(&base);
            format!(
                "{}-{}",
                &base[..150].trim_end_matches(['-', '.']),
                &tail[..16]
            )
        }
    }
}

/// A cluster a caCert is for, with the namespaces of the logical clouds
/// it reached it through (a project's caCert).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    provider: String,
    cluster: String,
    namespaces: BTreeSet<String>,
}

impl Target {
    /// EMCO's handle for a cluster: `provider+cluster`.
    fn handle(&self) -> String {
        format!("{}+{}", self.provider, self.cluster)
    }

    fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::Cluster,
            vec![self.provider.clone(), self.cluster.clone()],
        )
    }
}

/// What an enrollment signed, by cluster handle.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Enrolled {
    certificates: BTreeMap<String, KeyedCert>,
}

impl Orchestrator {
    /// Created or Terminated -> Instantiated. Enrollment signs a
    /// certificate for each cluster the caCert's groups select;
    /// distribution puts each cluster's enrolled CA on it.
    pub fn instantiate_ca_cert(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.ca_cert_step(cert, stage, actor, CertAction::Instantiate)
    }

    /// Instantiated or Updated -> Updated. Enrollment signs again, for the
    /// clusters the groups select now (EMCO makes every key anew too);
    /// distribution puts what the enrollment signed last.
    pub fn update_ca_cert(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        self.ca_cert_step(cert, stage, actor, CertAction::Update)
    }

    fn ca_cert_step(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
        action: CertAction,
    ) -> Result<DigState, OrchestratorError> {
        Self::admin_only(cert, actor)?;
        let (guard, state) = self.begin_at(&cert.key(stage), &cert.id())?;
        let next = Self::allow(&cert.describe(stage), &state, action)?;
        match stage {
            CertStage::Enrollment => self.sign(cert, state, next, &guard),
            CertStage::Distribution => self.distribute(cert, state, next, &guard),
        }
    }

    /// Instantiated or Updated -> Terminated. Distribution: rsync removes
    /// what it put on the clusters. Enrollment: the signed keys are
    /// forgotten, once no distribution still uses them.
    pub fn terminate_ca_cert(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
        actor: Actor,
    ) -> Result<DigState, OrchestratorError> {
        Self::admin_only(cert, actor)?;
        let (guard, state) = self.begin_at(&cert.key(stage), &cert.id())?;
        if stage == CertStage::Enrollment {
            let distribution = self
                .contexts
                .state(&cert.key(CertStage::Distribution))?
                .state;
            if distribution.is_deployed() {
                return Err(OrchestratorError::Conflict(format!(
                    "{} is {distribution}; terminate it before the enrollment",
                    cert.describe(CertStage::Distribution)
                )));
            }
        }
        let state = self.mark(
            CertAction::Terminate,
            &cert.describe(stage),
            &cert.key(stage),
            state,
            &guard,
        )?;
        if stage == CertStage::Enrollment {
            self.db.delete_secret(&cert.id(), ENROLLED_SECRET)?;
        }
        Ok(state)
    }

    /// One stage's state and what rsync did with its context.
    pub fn ca_cert_status(
        &self,
        cert: &CaCertRef,
        stage: CertStage,
    ) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
        self.db.get(&cert.id())?;
        self.synced(&cert.key(stage))
    }

    /// Refuses to let a caCert with a stage deployed be deleted; forgets
    /// the contexts of one that may be.
    pub fn release_ca_cert(&self, cert: &CaCertRef) -> Result<(), OrchestratorError> {
        for stage in [CertStage::Distribution, CertStage::Enrollment] {
            let state = self.contexts.state(&cert.key(stage))?.state;
            if state.is_deployed() || state == DeployState::InstantiateStopped {
                return Err(OrchestratorError::Deployed(format!(
                    "{} is {state}; terminate it before deleting the ca cert",
                    cert.describe(stage)
                )));
            }
        }
        for stage in [CertStage::Distribution, CertStage::Enrollment] {
            self.contexts.forget(&cert.key(stage))?;
        }
        Ok(())
    }

    /// Refuses a change of a caCert while a stage is deployed: what was
    /// signed and distributed was made from it (EMCO's rule too).
    pub fn check_ca_cert_edit(&self, cert: &CaCertRef) -> Result<(), OrchestratorError> {
        for stage in [CertStage::Enrollment, CertStage::Distribution] {
            let state = self.contexts.state(&cert.key(stage))?.state;
            if !matches!(state, DeployState::Created | DeployState::Terminated) {
                return Err(OrchestratorError::Conflict(format!(
                    "{} is {state}: the ca cert cannot change until it is terminated",
                    cert.describe(stage)
                )));
            }
        }
        Ok(())
    }

    /// A caCert gives clusters a CA and changes their mesh's trust, which
    /// is no project's to decide, even on its logical clouds' clusters.
    fn admin_only(cert: &CaCertRef, actor: Actor) -> Result<(), OrchestratorError> {
        match actor {
            Actor::Admin => Ok(()),
            Actor::Tenant => Err(OrchestratorError::Tenancy(format!(
                "{}: a ca cert puts a ClusterIssuer and Istio's mesh signer on its clusters, \
                 cluster-wide; only the admin enrolls and distributes them",
                cert.describe(CertStage::Enrollment)
            ))),
        }
    }

    /// Signs each target's certificate with the issuer's CA and enters
    /// `next`: the context places an empty app on the issuing cluster, so
    /// that status shows whether it is reachable, as EMCO's does.
    fn sign(
        &self,
        cert: &CaCertRef,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let stage = CertStage::Enrollment;
        let spec: CaCertSpec = self.db.spec(&cert.id())?;
        let targets = self.ca_cert_targets(cert)?;
        let issuing = ClusterRef::new(
            &spec.issuing_cluster.cluster_provider,
            &spec.issuing_cluster.cluster,
        );
        let (chain, key) = self.issuer_secret(&spec, &issuing)?;
        let issuer = IssuerSecret {
            chain: &chain,
            key: &key,
        };
        let revision = state.latest + 1;
        let mut enrolled = Enrolled::default();
        for target in &targets {
            if self.kv_value(target, "sgx", "enabled")?.as_deref() == Some("true") {
                return Err(OrchestratorError::Input(format!(
                    "cluster {} asks for EMCO's SGX path (kv-pair sgx: enabled), in which Intel's \
                     TCS issuer makes the key on the issuing cluster; wasmco does not take it",
                    target.handle()
                )));
            }
            let mut common_name =
                format!("{}-{}-{}-ca", cert.name, target.provider, target.cluster);
            let prefix = &spec.csr_info.subject.names.common_name_prefix;
            if !prefix.is_empty() {
                common_name = format!("{common_name}-{prefix}");
            }
            if let Some(name) = self.kv_value(target, "csrData", "commonName")? {
                common_name = name;
            }
            let signed = sign_for_cluster(issuer, &spec, &common_name).map_err(|e| {
                OrchestratorError::Input(format!(
                    "{}: signing for cluster {}: {e}",
                    cert.describe(stage),
                    target.handle()
                ))
            })?;
            enrolled.certificates.insert(target.handle(), signed);
        }
        let apps = [StoredApp::spread(stage.app(), vec![(issuing, Vec::new())])];
        state.enter(next, revision);
        self.contexts.write(
            &cert.key(stage),
            &Self::meta(cert, stage, revision),
            &apps,
            &state,
            guard.fence(),
        )?;
        // Serialising strings cannot fail.
        let bytes = serde_json::to_vec(&enrolled).unwrap_or_default();
        self.db.put_secret(&cert.id(), ENROLLED_SECRET, &bytes)?;
        self.sync.changed(&cert.key(stage));
        Ok(state)
    }

    /// Builds the distribution's context from what the enrollment signed
    /// and enters `next`.
    fn distribute(
        &self,
        cert: &CaCertRef,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let stage = CertStage::Distribution;
        let enrollment = self.contexts.state(&cert.key(CertStage::Enrollment))?.state;
        if !enrollment.is_deployed() {
            return Err(OrchestratorError::Conflict(format!(
                "{} is {enrollment}; instantiate it first",
                cert.describe(CertStage::Enrollment)
            )));
        }
        let enrolled: Enrolled = match self.db.secret(&cert.id(), ENROLLED_SECRET)? {
            Some(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| wasmco_store::db::DbError::Corrupt {
                    id: cert.id(),
                    reason: format!("its enrolled certificates: {e}"),
                })?
            }
            None => Enrolled::default(),
        };
        let targets = self.ca_cert_targets(cert)?;
        let mut per_cluster = Vec::with_capacity(targets.len());
        for target in &targets {
            let signed = enrolled.certificates.get(&target.handle()).ok_or_else(|| {
                OrchestratorError::Input(format!(
                    "cluster {} has no certificate from {} (was it added to a group since?); \
                     update the enrollment",
                    target.handle(),
                    cert.describe(CertStage::Enrollment)
                ))
            })?;
            per_cluster.push(self.distributed(cert, target, signed)?);
        }
        let per_cluster = targets
            .iter()
            .map(|t| ClusterRef::new(&t.provider, &t.cluster))
            .zip(per_cluster)
            .collect();
        let apps = [StoredApp::spread(stage.app(), per_cluster)];
        let revision = state.latest + 1;
        state.enter(next, revision);
        self.contexts.write(
            &cert.key(stage),
            &Self::meta(cert, stage, revision),
            &apps,
            &state,
            guard.fence(),
        )?;
        self.sync.changed(&cert.key(stage));
        Ok(state)
    }

    fn meta(cert: &CaCertRef, stage: CertStage, revision: u64) -> ContextMeta {
        let owner = match &cert.scope {
            CaCertScope::Provider(owner) | CaCertScope::Project(owner) => owner.clone(),
        };
        ContextMeta {
            project: owner,
            composite_app: stage.app().to_owned(),
            composite_app_version: String::new(),
            deployment_intent_group: cert.name.clone(),
            release: String::new(),
            revision,
            created: stored::now(),
            app_order: vec![stage.app().to_owned()],
            dependencies: BTreeMap::new(),
            // A ClusterIssuer and istio-system's objects need the cluster's rights.
            access: Access::default(),
            adopt_from: None,
            confinement: None,
            service_mirrors: Vec::new(),
        }
    }

    /// What one cluster gets: its CA as a Secret where cert-manager reads a
    /// ClusterIssuer's, the ClusterIssuer, a ProxyConfig per logical
    /// cloud namespace, and the ConfigCtrl that gives Istio the signer.
    fn distributed(
        &self,
        cert: &CaCertRef,
        target: &Target,
        signed: &KeyedCert,
    ) -> Result<Vec<Resource>, OrchestratorError> {
        let base = cert.object_base(target);
        let secret = format!("{base}-ca");
        let issuer = format!("{base}-issuer");
        let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let mut manifests = vec![
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": secret, "namespace": "cert-manager"},
                   "data": {"tls.crt": encode(&signed.certificate), "tls.key": encode(&signed.key)}}),
            json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                   "metadata": {"name": issuer},
                   "spec": {"ca": {"secretName": secret}}}),
        ];
        for namespace in &target.namespaces {
            manifests.push(
                json!({"apiVersion": "networking.istio.io/v1beta1", "kind": "ProxyConfig",
                "metadata": {"name": format!("{base}-{namespace}-pc"), "namespace": namespace},
                "spec": {"environmentVariables": {"ISTIO_META_CERT_SIGNER": issuer}}}),
            );
        }
        // Istio's mesh config takes the PEM as a YAML block under `pem: |`.
        let pem = signed.certificate.trim_end().replace('\n', "\n    ");
        let mut patch = vec![json!({
            "key": "mesh:\n  caCertificates\n",
            "value": format!("- certSigners:\n  - clusterissuers.cert-manager.io/{issuer}\n  pem: |\n    {pem}"),
        })];
        // A provider's caCert is the mesh's default signer; a project's is
        // chosen per namespace by its ProxyConfigs.
        if matches!(cert.scope, CaCertScope::Provider(_)) {
            patch.push(json!({
                "key": "mesh:\n  defaultConfig:\n    proxyMetadata:\n      ISTIO_META_CERT_SIGNER\n",
                "value": issuer,
            }));
        }
        manifests.push(
            json!({"apiVersion": "kncc.k8sappconfig.com.gitlab.com/v1alpha1",
            "kind": "ConfigCtrl",
            "metadata": {"name": format!("{base}-kncc"), "namespace": "istio-system"},
            "spec": {"resource": {"name": "istio", "namespace": "istio-system"}, "patch": patch}}),
        );
        manifests
            .into_iter()
            .map(|m| {
                Resource::from_manifest(m).map_err(|e| {
                    OrchestratorError::Input(format!(
                        "{}: {e}",
                        cert.describe(CertStage::Distribution)
                    ))
                })
            })
            .collect()
    }

    /// The issuer's CA certificate chain and key, read from its secret on
    /// the issuing cluster.
    fn issuer_secret(
        &self,
        spec: &CaCertSpec,
        cluster: &ClusterRef,
    ) -> Result<(String, String), OrchestratorError> {
        let kind = spec.issuer_ref.kind;
        let (issuer_namespace, secret_namespace) = kind.namespaces();
        let name = &spec.issuer_ref.name;
        let described = format!(
            "{} {name} on issuing cluster {}+{}",
            kind.as_str(),
            cluster.provider,
            cluster.cluster
        );
        let unusable = |reason: String| OrchestratorError::Input(format!("{described}: {reason}"));
        let mut metadata = json!({"name": name});
        if let Some(namespace) = issuer_namespace {
            metadata["namespace"] = json!(namespace);
        }
        let issuer = self
            .sync
            .object(
                cluster,
                &json!({"apiVersion": "cert-manager.io/v1", "kind": kind.as_str(), "metadata": metadata}),
            )
            .map_err(|e| unusable(format!("cannot be read: {e}")))?
            .ok_or_else(|| unusable("is not there".into()))?;
        let secret_name = issuer["spec"]["ca"]["secretName"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                unusable(
                    "is not a CA issuer (it has no spec.ca.secretName); wasmco signs with the \
                     key of a CA issuer"
                        .into(),
                )
            })?;
        let secret = self
            .sync
            .object(
                cluster,
                &json!({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": secret_name, "namespace": secret_namespace}}),
            )
            .map_err(|e| unusable(format!("its secret {secret_name} cannot be read: {e}")))?
            .ok_or_else(|| {
                unusable(format!(
                    "its secret {secret_namespace}/{secret_name} is not there"
                ))
            })?;
        let field = |key: &str| -> Result<String, OrchestratorError> {
            let encoded = secret["data"][key]
                .as_str()
                .ok_or_else(|| unusable(format!("its secret {secret_name} has no {key}")))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| unusable(format!("its secret's {key} is not base64: {e}")))?;
            String::from_utf8(bytes)
                .map_err(|_| unusable(format!("its secret's {key} is not PEM text")))
        };
        Ok((field("tls.crt")?, field("tls.key")?))
    }

    /// The value of `key` in the cluster's kv-pair `pair`, as EMCO reads
    /// its `sgx` and `csrData` pairs.
    fn kv_value(
        &self,
        target: &Target,
        pair: &str,
        key: &str,
    ) -> Result<Option<String>, OrchestratorError> {
        let mut path = target.id().path;
        path.push(pair.to_owned());
        let id = ResourceId::new(Kind::ClusterKvPair, path);
        if !self.db.exists(&id)? {
            return Ok(None);
        }
        let body = self.db.get(&id)?;
        Ok(body["spec"]["kv"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|entry| entry[key].as_str().map(str::to_owned)))
    }

    /// The clusters the caCert is for, each once, in the order its groups
    /// (and, for a project's, its logical clouds) name them.
    fn ca_cert_targets(&self, cert: &CaCertRef) -> Result<Vec<Target>, OrchestratorError> {
        let all_clusters = super::inputs::clusters(&self.db)?;
        let mut targets: Vec<Target> = Vec::new();
        let mut add = |provider: &str, cluster: &str, namespace: Option<&str>| {
            let index = match targets
                .iter()
                .position(|t| t.provider == provider && t.cluster == cluster)
            {
                Some(index) => index,
                None => {
                    targets.push(Target {
                        provider: provider.to_owned(),
                        cluster: cluster.to_owned(),
                        namespaces: BTreeSet::new(),
                    });
                    targets.len() - 1
                }
            };
            if let Some(namespace) = namespace.filter(|n| !n.is_empty()) {
                targets[index].namespaces.insert(namespace.to_owned());
            }
        };
        let id = cert.id();
        match &cert.scope {
            CaCertScope::Provider(_) => {
                let groups: Vec<(ResourceId, CaCertClusterGroupSpec)> =
                    self.db.list_specs(Kind::CaCertClusterGroup, &id.path)?;
                for (_, group) in groups {
                    for (provider, cluster) in group_clusters(&group, &all_clusters) {
                        add(provider, cluster, None);
                    }
                }
            }
            CaCertScope::Project(project) => {
                let bindings: Vec<(ResourceId, CaCertLogicalCloudSpec)> =
                    self.db.list_specs(Kind::CaCertLogicalCloud, &id.path)?;
                for (binding, spec) in bindings {
                    let cloud = ResourceId::new(
                        Kind::LogicalCloud,
                        vec![project.clone(), spec.logical_cloud.clone()],
                    );
                    let cloud_spec: LogicalCloudSpec = self.db.spec(&cloud)?;
                    let namespace = (!cloud_spec.is_admin()).then_some(cloud_spec.namespace);
                    let members: BTreeSet<(String, String)> = self
                        .db
                        .list_specs::<ClusterReferenceSpec>(
                            Kind::LogicalCloudClusterReference,
                            &cloud.path,
                        )?
                        .into_iter()
                        .map(|(_, r)| (r.cluster_provider, r.cluster))
                        .collect();
                    let groups: Vec<(ResourceId, CaCertClusterGroupSpec)> = self
                        .db
                        .list_specs(Kind::CaCertLcClusterGroup, &binding.path)?;
                    for (_, group) in groups {
                        for (provider, cluster) in group_clusters(&group, &all_clusters) {
                            // A group may name clusters outside the cloud;
                            // only the cloud's own count, as in EMCO.
                            if members.contains(&(provider.to_owned(), cluster.to_owned())) {
                                add(provider, cluster, namespace.as_deref());
                            }
                        }
                    }
                }
            }
        }
        if targets.is_empty() {
            return Err(OrchestratorError::Input(format!(
                "{} names no cluster: add a cluster group (…/clusters) that selects one{}",
                cert.describe(CertStage::Enrollment),
                match cert.scope {
                    CaCertScope::Project(_) => " of its logical clouds",
                    CaCertScope::Provider(_) => "",
                }
            )));
        }
        Ok(targets)
    }
}

/// The clusters a group selects: the one it names, if registered, or every
/// cluster of its provider with its label.
fn group_clusters<'a>(
    group: &'a CaCertClusterGroupSpec,
    clusters: &'a [ClusterInfo],
) -> impl Iterator<Item = (&'a str, &'a str)> {
    clusters
        .iter()
        .filter(move |c| {
            c.provider == group.cluster_provider
                && match group.scope {
                    GroupScope::Name => c.name == group.cluster,
                    GroupScope::Label => c.labels.contains(&group.label),
                }
        })
        .map(|c| (c.provider.as_str(), c.name.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_a_providers_and_a_projects_ca_cert_of_one_name_differ() {
        let provider = CaCertRef {
            scope: CaCertScope::Provider("p".into()),
            name: "c".into(),
        };
        let project = CaCertRef {
            scope: CaCertScope::Project("p".into()),
            name: "c".into(),
        };
        assert_ne!(
            provider.key(CertStage::Enrollment),
            project.key(CertStage::Enrollment)
        );
        let target = Target {
            provider: "p".into(),
            cluster: "Edge_1".into(),
            namespaces: BTreeSet::new(),
        };
        let base = provider.object_base(&target);
        assert_ne!(base, project.object_base(&target));
        assert!(base.ends_with("-c-p-edge-1"), "{base}");
        let long = CaCertRef {
            scope: CaCertScope::Provider("p".repeat(128)),
            name: "c".repeat(128),
        };
        assert!(long.object_base(&target).len() <= 180);
    }
}
