//! Certificates the way the Eggo design hands them out: a CA per cluster
//! (plus kubeadm's front-proxy and etcd CAs and service-account key), an
//! `admin.kubeconfig`, the kubeadm certificate set for a control-plane node,
//! and node CSRs signed for joining. The [`kubeconfig`] module decides what a
//! kubeconfig handed to wasmco may ask of the host.
//!
//! Keys are ECDSA P-256 (rcgen with ring); service-account tokens signed with
//! it are ES256, which the API server accepts.

pub mod ca_cert;
pub mod kubeconfig;
mod node;

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

/// How long a CA is valid.
const CA_VALIDITY: Duration = Duration::days(3650);
/// How long an issued certificate is valid (kubeadm's one year).
const LEAF_VALIDITY: Duration = Duration::days(365);

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// What was given cannot be used; the message says why.
    #[error("{field}: {reason}")]
    Invalid {
        /// The input at fault.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// rcgen refused (an internal inconsistency, not bad input).
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    /// The bundle could not be packed (in memory; not expected).
    #[error("packing the bundle failed: {0}")]
    Archive(std::io::Error),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> PkiError {
    PkiError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// A certificate with its private key, as PEM.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KeyedCert {
    /// The certificate.
    pub certificate: String,
    /// Its private key (PKCS#8).
    pub key: String,
}

/// One cluster's authorities; kept sealed, only certificates leave.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPki {
    /// The cluster CA (`ca.crt`/`ca.key`).
    pub ca: KeyedCert,
    /// kubeadm's `front-proxy-ca`.
    pub front_proxy_ca: KeyedCert,
    /// kubeadm's `etcd/ca`.
    pub etcd_ca: KeyedCert,
    /// `sa.key` (private) and `sa.pub`.
    pub service_account_key: String,
}

/// What a certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// TLS server.
    Server,
    /// TLS client.
    Client,
    /// Both (etcd's server and peer certificates).
    Both,
}

impl ClusterPki {
    /// New authorities for cluster `name`.
    pub fn create(name: &str) -> Result<ClusterPki, PkiError> {
        Self::with_ca(name, new_ca(&format!("{name}-ca"))?)
    }

    /// Authorities around an existing cluster CA (certificate and key as
    /// PEM); the CA must be a CA and the key must be its key.
    pub fn import(name: &str, certificate: &str, key: &str) -> Result<ClusterPki, PkiError> {
        let pair = KeyPair::from_pem(key)
            .map_err(|e| invalid("key", format!("not a PEM private key rcgen can use: {e}")))?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(certificate.as_bytes())
            .map_err(|e| invalid("certificate", format!("not a PEM certificate: {e}")))?;
        let parsed = pem
            .parse_x509()
            .map_err(|e| invalid("certificate", format!("not an X.509 certificate: {e}")))?;
        if !parsed.is_ca() {
            return Err(invalid(
                "certificate",
                "is not a CA (basicConstraints CA:FALSE)",
            ));
        }
        if parsed.public_key().subject_public_key.data.as_ref() != pair.public_key_raw() {
            return Err(invalid("key", "does not belong to the certificate"));
        }
        Issuer::from_ca_cert_pem(certificate, &pair)
            .map_err(|e| invalid("certificate", e.to_string()))?;
        Self::with_ca(
            name,
            KeyedCert {
                certificate: certificate.to_owned(),
                key: key.to_owned(),
            },
        )
    }

    fn with_ca(name: &str, ca: KeyedCert) -> Result<ClusterPki, PkiError> {
        Ok(ClusterPki {
            ca,
            front_proxy_ca: new_ca(&format!("{name}-front-proxy-ca"))?,
            etcd_ca: new_ca(&format!("{name}-etcd-ca"))?,
            service_account_key: KeyPair::generate()?.serialize_pem(),
        })
    }

    /// A client certificate from the cluster CA: `CN=user, O=groups…`.
    pub fn client(&self, user: &str, groups: &[&str]) -> Result<KeyedCert, PkiError> {
        issue(&self.ca, user, groups, &[], Usage::Client)
    }

    /// `admin.kubeconfig` for the cluster's API at `server`: a client
    /// certificate in `system:masters`, the CA to trust, as YAML.
    pub fn admin_kubeconfig(&self, cluster: &str, server: &str) -> Result<String, PkiError> {
        let host = server.strip_prefix("https://").unwrap_or_default();
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(invalid(
                "server",
                "must be an https:// URL of the cluster's API",
            ));
        }
        let admin = self.client("kubernetes-admin", &["system:masters"])?;
        Ok(kubeconfig(
            cluster,
            server,
            &self.ca.certificate,
            "kubernetes-admin",
            &admin,
        ))
    }
}

/// A client kubeconfig for `server` trusting `ca_pem`, as YAML.
pub fn kubeconfig(
    cluster: &str,
    server: &str,
    ca_pem: &str,
    user: &str,
    client: &KeyedCert,
) -> String {
    let trust = kube::config::Cluster {
        server: Some(server.into()),
        certificate_authority_data: Some(base64_encode(ca_pem.as_bytes())),
        ..kube::config::Cluster::default()
    };
    client_kubeconfig(cluster, trust, user, client, None)
}

/// A kubeconfig for `user` with `client`'s certificate on `cluster` (its
/// server and trust), in `namespace` when given, as YAML.
fn client_kubeconfig(
    cluster: &str,
    trust: kube::config::Cluster,
    user: &str,
    client: &KeyedCert,
    namespace: Option<&str>,
) -> String {
    use kube::config::{AuthInfo, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};
    let context = format!("{user}@{cluster}");
    let config = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: cluster.into(),
            cluster: Some(trust),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: user.into(),
            auth_info: Some(AuthInfo {
                client_certificate_data: Some(base64_encode(client.certificate.as_bytes())),
                client_key_data: Some(base64_encode(client.key.as_bytes()).into()),
                ..AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: context.clone(),
            context: Some(Context {
                cluster: cluster.into(),
                user: Some(user.into()),
                namespace: namespace.map(str::to_owned),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(context),
        ..Kubeconfig::default()
    };
    // Built as values, not text: a `server` holding a newline stays one
    // value. Serialising plain strings into YAML cannot fail.
    serde_norway::to_string(&config).unwrap_or_default()
}

pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A fresh private key (PKCS#8 PEM), for a user whose certificate a
/// cluster will sign.
pub fn new_key() -> Result<String, PkiError> {
    Ok(KeyPair::generate()?.serialize_pem())
}

/// A PEM certificate signing request for a client certificate `CN=user`
/// with `key_pem`, as the Kubernetes CSR API takes it.
pub fn client_csr(user: &str, key_pem: &str) -> Result<String, PkiError> {
    let key = KeyPair::from_pem(key_pem)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, user);
    // The signer decides validity and usages; a request names the subject.
    Ok(params.serialize_request(&key)?.pem()?)
}

/// A new self-signed CA called `common_name`.
pub fn new_ca(common_name: &str) -> Result<KeyedCert, PkiError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::minutes(5);
    params.not_after = now + CA_VALIDITY;
    params.serial_number = Some(random_serial());
    Ok(KeyedCert {
        certificate: params.self_signed(&key)?.pem(),
        key: key.serialize_pem(),
    })
}

fn leaf_params(common_name: &str, organizations: &[&str], usage: Usage) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    // rcgen keeps one value per attribute type; every caller here names one group.
    if let Some(organization) = organizations.first() {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *organization);
    }
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = match usage {
        Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
        Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        Usage::Both => vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
    };
    params.use_authority_key_identifier_extension = true;
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::minutes(5);
    params.not_after = now + LEAF_VALIDITY;
    params.serial_number = Some(random_serial());
    params
}

/// A fresh key and certificate signed by `ca`.
pub fn issue(
    ca: &KeyedCert,
    common_name: &str,
    organizations: &[&str],
    sans: &[String],
    usage: Usage,
) -> Result<KeyedCert, PkiError> {
    let mut params = leaf_params(common_name, organizations, usage);
    params.subject_alt_names = sans
        .iter()
        .map(|s| san_type(s).map_err(|reason| invalid("sans", reason)))
        .collect::<Result<_, _>>()?;
    let key = KeyPair::generate()?;
    let ca_key = KeyPair::from_pem(&ca.key)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.certificate, &ca_key)?;
    Ok(KeyedCert {
        certificate: params.signed_by(&key, &issuer)?.pem(),
        key: key.serialize_pem(),
    })
}

fn san_type(san: &str) -> Result<SanType, String> {
    if let Ok(ip) = san.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    let valid = !san.is_empty()
        && san.len() <= 253
        && san.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '*')
        });
    if !valid {
        return Err(format!("{san:?} is neither an IP address nor a DNS name"));
    }
    san.try_into()
        .map(SanType::DnsName)
        .map_err(|e| format!("{san:?}: {e}"))
}

fn dn_text(name: &DistinguishedName, ty: DnType) -> Option<String> {
    Some(match name.get(&ty)? {
        DnValue::Utf8String(s) => s.clone(),
        DnValue::PrintableString(s) => s.as_str().to_owned(),
        DnValue::Ia5String(s) => s.as_str().to_owned(),
        _ => return None,
    })
}

fn random_serial() -> SerialNumber {
    let mut bytes = uuid::Uuid::new_v4().into_bytes().to_vec();
    // A positive DER integer.
    bytes[0] &= 0x7f;
    SerialNumber::from(bytes)
}

/// A rustls server configuration serving `identity`, asking clients for a
/// certificate from `client_ca` when given (and refusing any other).
pub fn rustls_server(
    identity: &KeyedCert,
    client_ca: Option<&str>,
) -> Result<std::sync::Arc<rustls::ServerConfig>, PkiError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::sync::Arc;
    let tls = |reason: String| invalid("tls", reason);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = vec![
        CertificateDer::from_pem_slice(identity.certificate.as_bytes())
            .map_err(|e| tls(e.to_string()))?,
    ];
    let key =
        PrivateKeyDer::from_pem_slice(identity.key.as_bytes()).map_err(|e| tls(e.to_string()))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(e.to_string()))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(
                    CertificateDer::from_pem_slice(ca.as_bytes())
                        .map_err(|e| tls(e.to_string()))?,
                )
                .map_err(|e| tls(e.to_string()))?;
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| tls(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| tls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubeconfig_is_built_as_values_so_no_input_adds_a_field() {
        let ca = new_ca("c").unwrap();
        let client = issue(&ca, "u", &[], &[], Usage::Client).unwrap();
        let server = "https://10.0.0.5:6443\n    tokenFile: /etc/shadow";
        let yaml = kubeconfig("c", server, &ca.certificate, "u: x", &client);
        let config = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let cluster = config.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some(server));
        let user = config.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.token_file.is_none());
        assert_eq!(config.auth_infos[0].name, "u: x");
        assert_eq!(config.current_context.as_deref(), Some("u: x@c"));
    }
}
