//! EMCO's ca-certs: an intermediate CA for each of a set of clusters,
//! signed by a cert-manager CA issuer on an issuing cluster, then handed to
//! those clusters as their own issuer and their service mesh's signer.
//! The bodies are EMCO's (`src/ca-certs/json-schemas`), read strictly: a
//! field wasmco would not honour is refused, never skipped.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Scope, Spec};
use crate::document::{FieldError, Reference, check_name};
use crate::kinds::Kind;

/// The API group of the issuers a caCert may name.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";

/// The longest certificate anyone should ask for; EMCO sets no bound.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A caCert, under a cluster provider or a project.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaCertSpec {
    /// Whether each cluster's certificate is a CA (EMCO's default: yes).
    #[serde(rename = "isCA", default = "yes")]
    pub is_ca: bool,
    /// The issuer on the issuing cluster whose CA signs.
    pub issuer_ref: IssuerRef,
    /// How long each certificate is valid, as Go writes a duration.
    #[serde(default = "a_year")]
    pub duration: String,
    /// The cluster that holds the issuer.
    pub issuing_cluster: IssuingCluster,
    /// EMCO's SGX/TCS path (cert-manager makes the key on the issuing
    /// cluster); wasmco does not take it.
    #[serde(default)]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IssuerRef {
    /// Its name.
    pub name: String,
    /// `ClusterIssuer` (the default) or `Issuer` (in `default`).
    #[serde(default = "cluster_issuer")]
    pub kind: IssuerKind,
    /// `cert-manager.io`.
    #[serde(default)]
    pub group: String,
    /// Its API version; cert-manager's is `v1`.
    #[serde(default)]
    pub version: String,
}

fn cluster_issuer() -> IssuerKind {
    IssuerKind::ClusterIssuer
}

/// The two kinds of cert-manager issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IssuingCluster {
    /// The cluster.
    pub cluster: String,
    /// Its provider.
    pub cluster_provider: String,
}

/// `csrInfo`: the subject, names and key of each cluster's certificate.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CsrInfo {
    /// Bits of an RSA key, or the curve's size (256, 384) of an ECDSA one.
    #[serde(default = "rsa_bits")]
    pub key_size: u32,
    /// The CSR's version (Go ignores it too).
    #[serde(default)]
    pub version: u32,
    /// DNS subject alternative names.
    #[serde(default)]
    pub dns_names: Vec<String>,
    /// E-mail subject alternative names.
    #[serde(default)]
    pub email_addresses: Vec<String>,
    /// cert-manager's key usages; empty means cert-manager's own default.
    #[serde(default)]
    pub key_usages: Vec<KeyUsage>,
    /// The key's algorithm (and the CSR's signature's).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// The subject.
    #[serde(default)]
    pub subject: Subject,
}

fn rsa_bits() -> u32 {
    4096
}

impl Default for CsrInfo {
    fn default() -> Self {
        CsrInfo {
            key_size: rsa_bits(),
            version: 0,
            dns_names: Vec::new(),
            email_addresses: Vec::new(),
            key_usages: Vec::new(),
            algorithm: Algorithm::default(),
            subject: Subject::default(),
        }
    }
}

/// `csrInfo.algorithm`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Algorithm {
    /// The key's algorithm.
    #[serde(default)]
    pub public_key_algorithm: PublicKeyAlgorithm,
    /// The CSR's signature, as Go's `x509` names it. wasmco signs no CSR
    /// (it holds the issuer's key), so this is only checked to fit the key.
    #[serde(default)]
    pub signature_algorithm: String,
}

/// The key algorithms EMCO's schema lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PublicKeyAlgorithm {
    /// RSA, `keySize` bits.
    #[default]
    #[serde(rename = "RSA")]
    Rsa,
    /// DSA: no issuer signs with it now; refused.
    #[serde(rename = "DSA")]
    Dsa,
    /// ECDSA on P-256 or P-384.
    #[serde(rename = "ECDSA")]
    Ecdsa,
    /// Ed25519.
    Ed25519,
}

/// cert-manager's key usages (`spec.usages` of a Certificate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyUsage {
    /// `digital signature`.
    #[serde(rename = "digital signature")]
    DigitalSignature,
    /// `content commitment` (non-repudiation).
    #[serde(rename = "content commitment")]
    ContentCommitment,
    /// `key encipherment`.
    #[serde(rename = "key encipherment")]
    KeyEncipherment,
    /// `key agreement`.
    #[serde(rename = "key agreement")]
    KeyAgreement,
    /// `data encipherment`.
    #[serde(rename = "data encipherment")]
    DataEncipherment,
    /// `cert sign`.
    #[serde(rename = "cert sign")]
    CertSign,
    /// `crl sign`.
    #[serde(rename = "crl sign")]
    CrlSign,
    /// `server auth`.
    #[serde(rename = "server auth")]
    ServerAuth,
    /// `client auth`.
    #[serde(rename = "client auth")]
    ClientAuth,
    /// `code signing`.
    #[serde(rename = "code signing")]
    CodeSigning,
    /// `email protection`.
    #[serde(rename = "email protection")]
    EmailProtection,
    /// `timestamping`.
    Timestamping,
    /// `ocsp signing`.
    #[serde(rename = "ocsp signing")]
    OcspSigning,
}

/// `csrInfo.subject`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subject {
    /// Where.
    #[serde(default)]
    pub locale: Locale,
    /// `commonNamePrefix`, which EMCO appends to the common name.
    #[serde(default)]
    pub names: Names,
    /// Who.
    #[serde(default)]
    pub organization: Organization,
}

/// `subject.locale`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Locale {
    /// C.
    #[serde(default)]
    pub country: Vec<String>,
    /// L.
    #[serde(default)]
    pub locality: Vec<String>,
    /// postalCode.
    #[serde(default)]
    pub postal_code: Vec<String>,
    /// ST.
    #[serde(default)]
    pub province: Vec<String>,
    /// street.
    #[serde(default)]
    pub street_address: Vec<String>,
}

/// `subject.names`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Names {
    /// Put at the end of the common name, after a `-` (EMCO's name for it
    /// notwithstanding).
    #[serde(default)]
    pub common_name_prefix: String,
}

/// `subject.organization`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Organization {
    /// O.
    #[serde(default)]
    pub names: Vec<String>,
    /// OU.
    #[serde(default)]
    pub units: Vec<String>,
}

/// The names of a certificate's subject attributes, with their values.
pub type SubjectAttributes<'a> = [(&'static str, &'a [String]); 7];

impl Subject {
    /// Each attribute the subject may set, by its field's path.
    pub fn attributes(&self) -> SubjectAttributes<'_> {
        [
            ("locale.country", &self.locale.country),
            ("locale.locality", &self.locale.locality),
            ("locale.postalCode", &self.locale.postal_code),
            ("locale.province", &self.locale.province),
            ("locale.streetAddress", &self.locale.street_address),
            ("organization.names", &self.organization.names),
            ("organization.units", &self.organization.units),
        ]
    }
}

/// Go's `x509` signature algorithms by the key family they need.
const SIGNATURES: &[(&str, PublicKeyAlgorithm)] = &[
    ("MD5WithRSA", PublicKeyAlgorithm::Rsa),
    ("SHA1WithRSA", PublicKeyAlgorithm::Rsa),
    ("SHA256WithRSA", PublicKeyAlgorithm::Rsa),
    ("SHA384WithRSA", PublicKeyAlgorithm::Rsa),
    ("SHA512WithRSA", PublicKeyAlgorithm::Rsa),
    ("SHA256WithRSAPSS", PublicKeyAlgorithm::Rsa),
    ("SHA384WithRSAPSS", PublicKeyAlgorithm::Rsa),
    ("SHA512WithRSAPSS", PublicKeyAlgorithm::Rsa),
    ("DSAWithSHA1", PublicKeyAlgorithm::Dsa),
    ("DSAWithSHA256", PublicKeyAlgorithm::Dsa),
    ("ECDSAWithSHA1", PublicKeyAlgorithm::Ecdsa),
    ("ECDSAWithSHA256", PublicKeyAlgorithm::Ecdsa),
    ("ECDSAWithSHA384", PublicKeyAlgorithm::Ecdsa),
    ("ECDSAWithSHA512", PublicKeyAlgorithm::Ecdsa),
    ("PureEd25519", PublicKeyAlgorithm::Ed25519),
];

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

    fn check_csr_info(&self) -> Result<(), FieldError> {
        let info = &self.csr_info;
        let algorithm = info.algorithm.public_key_algorithm;
        let size_fits = match algorithm {
            PublicKeyAlgorithm::Rsa => (2048..=8192).contains(&info.key_size),
            PublicKeyAlgorithm::Ecdsa => matches!(info.key_size, 256 | 384),
            // Its size is fixed; EMCO's files may still carry a number.
            PublicKeyAlgorithm::Ed25519 => true,
            PublicKeyAlgorithm::Dsa => {
                return Err(FieldError::new(
                    "spec.csrInfo.algorithm.publicKeyAlgorithm",
                    "DSA keys are refused (no current TLS stack accepts them); use RSA, ECDSA or Ed25519",
                ));
            }
        };
        if !size_fits {
            return Err(FieldError::new(
                "spec.csrInfo.keySize",
                format!(
                    "{} does not fit the key algorithm: RSA takes 2048 to 8192 bits, ECDSA 256 or 384",
                    info.key_size
                ),
            ));
        }
        let signature = info.algorithm.signature_algorithm.as_str();
        if !signature.is_empty() {
            match SIGNATURES.iter().find(|(name, _)| *name == signature) {
                None => {
                    return Err(FieldError::new(
                        "spec.csrInfo.algorithm.signatureAlgorithm",
                        format!("{signature:?} is not one of Go's x509 signature algorithms"),
                    ));
                }
                Some((_, family)) if *family != algorithm => {
                    return Err(FieldError::new(
                        "spec.csrInfo.algorithm.signatureAlgorithm",
                        format!("{signature} does not sign with the key's algorithm"),
                    ));
                }
                Some(_) => {}
            }
        }
        for (field, values) in info.subject.attributes() {
            if values.len() > 1 {
                return Err(FieldError::new(
                    format!("spec.csrInfo.subject.{field}"),
                    "wasmco puts at most one value of each subject attribute in a certificate",
                ));
            }
            if let Some(value) = values.first()
                && (value.is_empty() || value.len() > 128)
            {
                return Err(FieldError::new(
                    format!("spec.csrInfo.subject.{field}[0]"),
                    "must be 1 to 128 characters",
                ));
            }
        }
        if info.subject.names.common_name_prefix.len() > 128 {
            return Err(FieldError::new(
                "spec.csrInfo.subject.names.commonNamePrefix",
                "must be at most 128 characters",
            ));
        }
        for (i, name) in info.dns_names.iter().enumerate() {
            let fits = !name.is_empty()
                && name.len() <= 253
                && name.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '*')
                });
            if !fits {
                return Err(FieldError::new(
                    format!("spec.csrInfo.dnsNames[{i}]"),
                    format!("{name:?} is not a DNS name"),
                ));
            }
        }
        for (i, address) in info.email_addresses.iter().enumerate() {
            let fits = address.len() <= 254
                && address
                    .split_once('@')
                    .is_some_and(|(user, host)| !user.is_empty() && !host.is_empty())
                && !address.chars().any(|c| c.is_whitespace() || c.is_control());
            if !fits {
                return Err(FieldError::new(
                    format!("spec.csrInfo.emailAddresses[{i}]"),
                    format!("{address:?} is not an e-mail address"),
                ));
            }
        }
        Ok(())
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
        self.check_csr_info()?;
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

/// A caCert's cluster group: the clusters it is for, by name or by label.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaCertClusterGroupSpec {
    /// `name` or `label`.
    pub scope: GroupScope,
    /// The provider of the clusters.
    pub cluster_provider: String,
    /// The cluster, for `scope: name`.
    #[serde(default)]
    pub cluster: String,
    /// The label, for `scope: label`.
    #[serde(default)]
    pub label: String,
}

/// How a cluster group names its clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupScope {
    /// One cluster, by name.
    Name,
    /// Every cluster of the provider with the label.
    Label,
}

impl Spec for CaCertClusterGroupSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.clusterProvider", &self.cluster_provider)?;
        match self.scope {
            GroupScope::Name => {
                check_name("spec.cluster", &self.cluster)?;
                Ok(vec![Reference {
                    field: "spec.cluster".into(),
                    kind: Kind::Cluster,
                    path: vec![self.cluster_provider, self.cluster],
                }])
            }
            GroupScope::Label => {
                check_name("spec.label", &self.label)?;
                Ok(vec![Reference {
                    field: "spec.clusterProvider".into(),
                    kind: Kind::ClusterProvider,
                    path: vec![self.cluster_provider],
                }])
            }
        }
    }
}

/// A project caCert's logical cloud: its groups' clusters count only where
/// the cloud has them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaCertLogicalCloudSpec {
    /// The project's logical cloud.
    pub logical_cloud: String,
}

impl Spec for CaCertLogicalCloudSpec {
    fn check(self, scope: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        check_name("spec.logicalCloud", &self.logical_cloud)?;
        Ok(vec![Reference {
            field: "spec.logicalCloud".into(),
            kind: Kind::LogicalCloud,
            path: vec![scope.parent[0].clone(), self.logical_cloud],
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
