//! A caCert's enrollment: wasmco reads the issuer's CA secret through the
//! issuing cluster's kubeconfig and signs each cluster's certificate
//! itself; what it signed is sealed in the store for the distribution.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

use wasmco_core::resource::Resource;
use wasmco_core::specs::CaCertSpec;
use wasmco_core::{ClusterRef, Kind};
use wasmco_pki::KeyedCert;
use wasmco_pki::ca_cert::{IssuerSecret, sign_for_cluster};
use wasmco_store::appcontext::{DeployState, DigState, StoredApp};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

use super::targets::{Target, targets};
use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::shared::{Shared, own_meta};
use crate::target::{CaCertRef, CertStage};

/// The secret of a caCert holding what its enrollment signed.
const ENROLLED_SECRET: &str = "enrolled";

/// What an enrollment signed, by cluster handle.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Enrolled {
    pub(super) certificates: BTreeMap<String, KeyedCert>,
}

/// What the enrollment of `cert` signed last; nothing before its first.
pub(super) fn enrolled(db: &ResourceDb, cert: &CaCertRef) -> Result<Enrolled, DbError> {
    match db.secret(&cert.id(), ENROLLED_SECRET)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| DbError::Corrupt {
            id: cert.id(),
            reason: format!("its enrolled certificates: {e}"),
        }),
        None => Ok(Enrolled::default()),
    }
}

/// Forgets what the enrollment of `cert` signed.
pub(super) fn forget_enrolled(db: &ResourceDb, cert: &CaCertRef) -> Result<(), DbError> {
    db.delete_secret(&cert.id(), ENROLLED_SECRET)
}

/// The meta of one stage's context: one app, named for the stage; a
/// ClusterIssuer and istio-system's objects need the cluster's rights.
/// Enters `next` at a new revision of `stage` whose one app is spread
/// over `per_cluster`, and writes its context. The caller nudges rsync
/// once whatever goes with the revision is stored too.
pub(super) fn write_stage(
    shared: &Shared,
    cert: &CaCertRef,
    stage: CertStage,
    per_cluster: Vec<(ClusterRef, Vec<Resource>)>,
    state: &mut DigState,
    next: DeployState,
    guard: &TargetGuard,
) -> Result<(), OrchestratorError> {
    let revision = state.latest + 1;
    let meta = own_meta(
        cert.owner(),
        stage.app(),
        &cert.name,
        revision,
        vec![stage.app().to_owned()],
    );
    let apps = [StoredApp::spread(stage.app(), per_cluster)];
    state.enter(next, revision);
    shared
        .contexts
        .write(&cert.key(stage), &meta, &apps, state, guard.fence())?;
    Ok(())
}

/// Signing, over the shared stores and the issuing cluster.
pub(super) struct Enrollment<'a> {
    shared: &'a Shared,
}

impl<'a> Enrollment<'a> {
    pub(super) fn of(shared: &'a Shared) -> Self {
        Enrollment { shared }
    }

    /// Signs each target's certificate with the issuer's CA and enters
    /// `next`: the context places an empty app on the issuing cluster, so
    /// that status shows whether it is reachable, as EMCO's does.
    pub(super) fn sign(
        &self,
        cert: &CaCertRef,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let stage = CertStage::Enrollment;
        let spec: CaCertSpec = self.shared.db.spec(&cert.id())?;
        let targets = targets(&self.shared.db, cert)?;
        let issuing = ClusterRef::new(
            &spec.issuing_cluster.cluster_provider,
            &spec.issuing_cluster.cluster,
        );
        let (chain, key) = self.issuer_secret(&spec, &issuing)?;
        let issuer = IssuerSecret {
            chain: &chain,
            key: &key,
        };
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
        let per_cluster = vec![(issuing, Vec::new())];
        write_stage(
            self.shared,
            cert,
            stage,
            per_cluster,
            &mut state,
            next,
            guard,
        )?;
        // Serialising strings cannot fail.
        let bytes = serde_json::to_vec(&enrolled).unwrap_or_default();
        self.shared
            .db
            .put_secret(&cert.id(), ENROLLED_SECRET, &bytes)?;
        self.shared.sync.changed(&cert.key(stage));
        Ok(state)
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
            .shared
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
            .shared
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
        if !self.shared.db.exists(&id)? {
            return Ok(None);
        }
        let body = self.shared.db.get(&id)?;
        Ok(body["spec"]["kv"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|entry| entry[key].as_str().map(str::to_owned)))
    }
}
