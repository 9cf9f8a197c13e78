//! Keys, CAs and the certificates they sign, with the subject, usages and
//! validity kubeadm gives them.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};

use crate::cert::{KeyedCert, Usage};
use crate::error::{PkiError, invalid};

/// How long a CA is valid.
const CA_VALIDITY: Duration = Duration::days(3650);
/// How long an issued certificate is valid (kubeadm's one year).
const LEAF_VALIDITY: Duration = Duration::days(365);

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

pub(crate) fn leaf_params(
    common_name: &str,
    organizations: &[&str],
    usage: Usage,
) -> CertificateParams {
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

pub(crate) fn san_type(san: &str) -> Result<SanType, String> {
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

/// A fresh serial number: random, so no two certificates share one.
pub(crate) fn random_serial() -> SerialNumber {
    let mut bytes = uuid::Uuid::new_v4().into_bytes().to_vec();
    // A positive DER integer.
    bytes[0] &= 0x7f;
    SerialNumber::from(bytes)
}
