//! `csrInfo`: what each cluster's certificate says, its subject, names
//! and key, and what of it wasmco can honour.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::document::FieldError;

/// `csrInfo`: the subject, names and key of each cluster's certificate.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "CsrAlgorithm")]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "CsrSubject")]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "CsrLocale")]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "CsrNames")]
pub struct Names {
    /// Put at the end of the common name, after a `-` (EMCO's name for it
    /// notwithstanding).
    #[serde(default)]
    pub common_name_prefix: String,
}

/// `subject.organization`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "CsrOrganization")]
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

impl CsrInfo {
    /// Refuses what wasmco would not put in a certificate as asked.
    pub(super) fn check(&self) -> Result<(), FieldError> {
        self.check_key()?;
        self.check_signature()?;
        self.subject.check()?;
        self.check_dns_names()?;
        self.check_email_addresses()
    }

    /// The key's algorithm is one a TLS stack takes, at a size it has.
    fn check_key(&self) -> Result<(), FieldError> {
        let size_fits = match self.algorithm.public_key_algorithm {
            PublicKeyAlgorithm::Rsa => (2048..=8192).contains(&self.key_size),
            PublicKeyAlgorithm::Ecdsa => matches!(self.key_size, 256 | 384),
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
                    self.key_size
                ),
            ));
        }
        Ok(())
    }

    /// The signature algorithm, if named, is Go's and fits the key.
    fn check_signature(&self) -> Result<(), FieldError> {
        let signature = self.algorithm.signature_algorithm.as_str();
        if signature.is_empty() {
            return Ok(());
        }
        match SIGNATURES.iter().find(|(name, _)| *name == signature) {
            None => Err(FieldError::new(
                "spec.csrInfo.algorithm.signatureAlgorithm",
                format!("{signature:?} is not one of Go's x509 signature algorithms"),
            )),
            Some((_, family)) if *family != self.algorithm.public_key_algorithm => {
                Err(FieldError::new(
                    "spec.csrInfo.algorithm.signatureAlgorithm",
                    format!("{signature} does not sign with the key's algorithm"),
                ))
            }
            Some(_) => Ok(()),
        }
    }

    fn check_dns_names(&self) -> Result<(), FieldError> {
        for (i, name) in self.dns_names.iter().enumerate() {
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
        Ok(())
    }

    fn check_email_addresses(&self) -> Result<(), FieldError> {
        for (i, address) in self.email_addresses.iter().enumerate() {
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

impl Subject {
    /// One value of each attribute at most, each of a length a
    /// certificate holds.
    fn check(&self) -> Result<(), FieldError> {
        for (field, values) in self.attributes() {
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
        if self.names.common_name_prefix.len() > 128 {
            return Err(FieldError::new(
                "spec.csrInfo.subject.names.commonNamePrefix",
                "must be at most 128 characters",
            ));
        }
        Ok(())
    }
}
