//! EMCO's ca-certs: an intermediate CA for each of a set of clusters,
//! signed by a cert-manager CA issuer on an issuing cluster, then handed to
//! those clusters as their own issuer and their service mesh's signer.
//! The bodies are EMCO's (`src/ca-certs/json-schemas`), read strictly: a
//! field wasmco would not honour is refused, never skipped.

use std::time::Duration;

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

use super::checking::{Scope, Spec};
use super::patterns::NAME_PATTERN;
use crate::document::{FieldError, Reference, check_name};
use crate::kinds::Kind;

mod csr;
mod groups;

pub use csr::{Algorithm, CsrInfo, KeyUsage, PublicKeyAlgorithm};
pub use groups::{CaCertClusterGroupSpec, CaCertLogicalCloudSpec, GroupScope};

/// The API group of the issuers a caCert may name.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";

/// The longest certificate anyone should ask for; EMCO sets no bound.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A caCert, under a cluster provider or a project.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaCertSpec {
    /// Whether each cluster's certificate is a CA (EMCO's default: yes).
    #[serde(rename = "isCA", default = "yes")]
    pub is_ca: bool,
    /// The issuer on the issuing cluster whose CA signs.
    pub issuer_ref: IssuerRef,
    /// How long each certificate is valid, as Go writes a duration.
    #[serde(default = "a_year")]
    #[schemars(description = "a Go duration (\"8760h\") of a minute to 100 years")]
    pub duration: String,
    /// The cluster that holds the issuer.
    pub issuing_cluster: IssuingCluster,
    /// EMCO's SGX/TCS path (cert-manager makes the key on the issuing
    /// cluster); wasmco does not take it.
    #[serde(default)]
    // Refused by the check, so no body the document calls valid has it.
    #[schemars(skip)]
    pub certificate: Option<serde_json::Value>,
    /// What each cluster's certificate says.
    #[serde(default)]
    pub csr_info: CsrInfo,
}

fn yes() -> bool {
    true
}

fn a_year() -> String {
    "8760h".to_owned()
}

/// `issuerRef`: a cert-manager issuer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = group_is_required)]
pub struct IssuerRef {
    /// Its name.
    #[schemars(pattern(NAME_PATTERN))]
    pub name: String,
    /// `ClusterIssuer` (the default) or `Issuer` (in `default`).
    #[serde(default = "cluster_issuer")]
    pub kind: IssuerKind,
    /// `cert-manager.io`.
    #[serde(default)]
    #[schemars(extend("enum" = [CERT_MANAGER_GROUP]))]
    pub group: String,
    /// Its API version; cert-manager's is `v1`.
    #[serde(default)]
    #[schemars(extend("enum" = ["", "v1"]))]
    pub version: String,
}

/// `group` is read as empty when left out, so that the check can name it;
/// to the document, which holds it to one value, it is required.
fn group_is_required(schema: &mut Schema) {
    if let Some(serde_json::Value::Array(required)) = schema.get_mut("required") {
        required.push("group".into());
    }
}

fn cluster_issuer() -> IssuerKind {
    IssuerKind::ClusterIssuer
}

/// The two kinds of cert-manager issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum IssuerKind {
    /// Cluster-wide; its CA secret lives in `cert-manager`.
    ClusterIssuer,
    /// Namespaced; EMCO's request names no namespace, so `default`.
    Issuer,
}

impl IssuerKind {
    /// The namespace the issuer (`None`: cluster-scoped) and its CA secret
    /// live in, with cert-manager's defaults.
    pub fn namespaces(self) -> (Option<&'static str>, &'static str) {
        match self {
            IssuerKind::ClusterIssuer => (None, "cert-manager"),
            IssuerKind::Issuer => (Some("default"), "default"),
        }
    }

    /// Its name in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            IssuerKind::ClusterIssuer => "ClusterIssuer",
            IssuerKind::Issuer => "Issuer",
        }
    }
}

/// `issuingCluster`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IssuingCluster {
    /// The cluster.
    #[schemars(pattern(NAME_PATTERN))]
    pub cluster: String,
    /// Its provider.
    #[schemars(pattern(NAME_PATTERN))]
    pub cluster_provider: String,
}

impl CaCertSpec {
    /// `duration` as a length of time (checked at create).
    pub fn valid_for(&self) -> Result<Duration, FieldError> {
        let invalid = |reason: String| FieldError::new("spec.duration", reason);
        let parsed = humantime::parse_duration(self.duration.trim()).map_err(|e| {
            invalid(format!(
                "{:?} is not a duration like \"8760h\" or \"90m\": {e}",
                self.duration
            ))
        })?;
        if parsed < Duration::from_secs(60) || parsed > LONGEST {
            return Err(invalid(format!(
                "{:?} must be at least a minute and at most 100 years",
                self.duration
            )));
        }
        Ok(parsed)
    }
}

impl Spec for CaCertSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.issuerRef.name", &self.issuer_ref.name)?;
        if self.issuer_ref.group != CERT_MANAGER_GROUP {
            return Err(FieldError::new(
                "spec.issuerRef.group",
                format!(
                    "must be {CERT_MANAGER_GROUP}: the issuers wasmco signs with are cert-manager's"
                ),
            ));
        }
        if !matches!(self.issuer_ref.version.as_str(), "" | "v1") {
            return Err(FieldError::new(
                "spec.issuerRef.version",
                "cert-manager's issuers are v1",
            ));
        }
        if self.certificate.is_some() {
            return Err(FieldError::new(
                "spec.certificate",
                "is EMCO's SGX/TCS path (the key made on the issuing cluster by Intel's TCS \
                 issuer), which wasmco does not take; leave it out",
            ));
        }
        self.valid_for()?;
        self.csr_info.check()?;
        let issuing = &self.issuing_cluster;
        check_name(
            "spec.issuingCluster.clusterProvider",
            &issuing.cluster_provider,
        )?;
        check_name("spec.issuingCluster.cluster", &issuing.cluster)?;
        Ok(vec![Reference {
            field: "spec.issuingCluster.cluster".into(),
            kind: Kind::Cluster,
            path: vec![issuing.cluster_provider.clone(), issuing.cluster.clone()],
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::specs::read_spec;
    use serde_json::json;

    fn emco_cert0() -> serde_json::Value {
        json!({"csrInfo":{"algorithm":{"publicKeyAlgorithm":"RSA","signatureAlgorithm":"SHA512WithRSA"},
            "dnsNames":[],"emailAddresses":[],"keySize":4096,"keyUsages":[],
            "subject":{"locale":{"country":[],"locality":[],"postalCode":[],"province":[],"streetAddress":[]},
            "names":{"commonNamePrefix":"foo"},"organization":{"names":[],"units":[]}},"version":1},
            "duration":"8760h","isCA":true,
            "issuerRef":{"group":"cert-manager.io","kind":"ClusterIssuer","name":"new-istio-system"},
            "issuingCluster":{"cluster":"issuer1","clusterProvider":"provider1"}})
    }

    fn check(spec: serde_json::Value) -> Result<Vec<Reference>, FieldError> {
        read_spec::<CaCertSpec>(&spec)?.check(&Scope { parent: &[] })
    }

    #[test]
    fn emcos_example_body_is_taken_and_names_its_issuing_cluster() {
        let refs = check(emco_cert0()).unwrap();
        assert_eq!(refs[0].path, ["provider1", "issuer1"]);
        let spec: CaCertSpec = read_spec(&emco_cert0()).unwrap();
        assert_eq!(spec.valid_for().unwrap(), Duration::from_secs(8760 * 3600));
    }

    #[test]
    fn what_wasmco_would_not_honour_is_refused_by_field() {
        let cases = [
            ("/csrInfo/keySize", json!(1024), "spec.csrInfo.keySize"),
            (
                "/csrInfo/algorithm/publicKeyAlgorithm",
                json!("DSA"),
                "spec.csrInfo.algorithm.publicKeyAlgorithm",
            ),
            (
                "/csrInfo/algorithm/signatureAlgorithm",
                json!("ECDSAWithSHA256"),
                "spec.csrInfo.algorithm.signatureAlgorithm",
            ),
            (
                "/csrInfo/subject/organization/names",
                json!(["a", "b"]),
                "spec.csrInfo.subject.organization.names",
            ),
            ("/duration", json!("forever"), "spec.duration"),
            (
                "/issuerRef/group",
                json!("example.com"),
                "spec.issuerRef.group",
            ),
            (
                "/csrInfo/keyUsages",
                json!(["wishful thinking"]),
                "spec.csrInfo.keyUsages[0]",
            ),
        ];
        for (pointer, value, field) in cases {
            let mut spec = emco_cert0();
            *spec.pointer_mut(pointer).unwrap() = value;
            let error = check(spec).unwrap_err();
            assert_eq!(error.field, field, "{pointer}: {error:?}");
        }
        let mut sgx = emco_cert0();
        sgx["certificate"] = json!({"commonName": "x"});
        assert_eq!(check(sgx).unwrap_err().field, "spec.certificate");
    }
}
