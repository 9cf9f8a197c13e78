//! A caCert's distribution: a one-app context, handed to rsync as a
//! logical cloud's is, gives each cluster its enrolled CA's Secret, a
//! ClusterIssuer using it, a KNCC ConfigCtrl adding it to Istio's mesh
//! config, and (for a project's caCert) a ProxyConfig naming it in each
//! logical cloud's namespace.

use base64::Engine;
use serde_json::json;

use wasmco_core::ClusterRef;
use wasmco_core::resource::Resource;
use wasmco_pki::KeyedCert;
use wasmco_store::appcontext::{DeployState, DigState};

use super::enrollment::{enrolled, write_stage};
use super::targets::{Target, targets};
use crate::error::OrchestratorError;
use crate::locks::TargetGuard;
use crate::shared::Shared;
use crate::target::{CaCertRef, CaCertScope, CertStage};

/// Putting the enrolled CAs on the clusters, over the shared stores.
pub(super) struct Distribution<'a> {
    shared: &'a Shared,
}

impl<'a> Distribution<'a> {
    pub(super) fn of(shared: &'a Shared) -> Self {
        Distribution { shared }
    }

    /// Builds the distribution's context from what the enrollment signed
    /// and enters `next`.
    pub(super) fn distribute(
        &self,
        cert: &CaCertRef,
        mut state: DigState,
        next: DeployState,
        guard: &TargetGuard,
    ) -> Result<DigState, OrchestratorError> {
        let stage = CertStage::Distribution;
        let enrollment = self
            .shared
            .contexts
            .state(&cert.key(CertStage::Enrollment))?
            .state;
        if !enrollment.is_deployed() {
            return Err(OrchestratorError::Conflict(format!(
                "{} is {enrollment}; instantiate it first",
                cert.describe(CertStage::Enrollment)
            )));
        }
        let enrolled = enrolled(&self.shared.db, cert)?;
        let targets = targets(&self.shared.db, cert)?;
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
        write_stage(
            self.shared,
            cert,
            stage,
            per_cluster,
            &mut state,
            next,
            guard,
        )?;
        self.shared.sync.changed(&cert.key(stage));
        Ok(state)
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
        let base = object_base(cert, target);
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
}

/// The prefix of the names of what it puts on a cluster: EMCO's
/// `<cert>-<provider>-<cluster>`, after a short hash of its key so that
/// a project's caCert and a provider's of the same name stay apart.
fn object_base(cert: &CaCertRef, target: &Target) -> String {
    let hash = wasmco_core::cloud::owner_label(&cert.key(CertStage::Distribution));
    let base = format!(
        "{}-{}-{}-{}",
        &hash[..8],
        cert.name,
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::target::CaCertScope;

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
        let base = object_base(&provider, &target);
        assert_ne!(base, object_base(&project, &target));
        assert!(base.ends_with("-c-p-edge-1"), "{base}");
        let long = CaCertRef {
            scope: CaCertScope::Provider("p".repeat(128)),
            name: "c".repeat(128),
        };
        assert!(object_base(&long, &target).len() <= 180);
    }
}
