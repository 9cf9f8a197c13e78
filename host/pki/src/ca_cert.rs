//! The certificates of EMCO's ca-certs: for each cluster, a key and a
//! certificate signed by a cert-manager CA issuer's key, as that issuer
//! would sign the cluster's request. EMCO sends the request to the issuing
//! cluster and waits for cert-manager; wasmco reads the issuer's secret
//! through the cluster's kubeconfig and signs in place, so no cert-manager
//! needs to run there and nothing is left on it.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{EncodePrivateKey, LineEnding};
use time::{Duration, OffsetDateTime};
use wasmco_core::specs::{CaCertSpec, CsrInfo, KeyUsage, PublicKeyAlgorithm};

use crate::cert::KeyedCert;
use crate::error::{PkiError, invalid};
use crate::issue::{random_serial, san_type};

/// A CA issuer's secret as cert-manager keeps it.
#[derive(Debug, Clone, Copy)]
pub struct IssuerSecret<'a> {
    /// `tls.crt`: the issuer's certificate, then the certificates above it.
    pub chain: &'a str,
    /// `tls.key`: its key (PKCS#1 or PKCS#8 PEM).
    pub key: &'a str,
}

/// A key and certificate for `common_name` as `spec` asks, signed by
/// `issuer`. The certificate comes back followed by the issuer's chain,
/// the way a CA issuer's `tls.crt` must hold it; an RSA key is PKCS#1 PEM,
/// as EMCO writes it, others PKCS#8.
pub fn sign_for_cluster(
    issuer: IssuerSecret<'_>,
    spec: &CaCertSpec,
    common_name: &str,
) -> Result<KeyedCert, PkiError> {
    let issuer_key = issuer_key_pair(issuer.key)?;
    let (_, first) = x509_parser::pem::parse_x509_pem(issuer.chain.as_bytes())
        .map_err(|e| invalid("tls.crt", format!("not a PEM certificate: {e}")))?;
    let parsed = first
        .parse_x509()
        .map_err(|e| invalid("tls.crt", format!("not an X.509 certificate: {e}")))?;
    if !parsed.is_ca() {
        return Err(invalid(
            "tls.crt",
            "the issuer's certificate is not a CA (basicConstraints CA:FALSE)",
        ));
    }
    if parsed.public_key().subject_public_key.data.as_ref() != issuer_key.public_key_raw() {
        return Err(invalid(
            "tls.key",
            "does not belong to the issuer's certificate",
        ));
    }
    let signer = Issuer::from_ca_cert_der(&first.contents.clone().into(), &issuer_key)
        .map_err(|e| invalid("tls.crt", e))?;
    let (key, key_pem) = new_key(spec)?;
    let params = params(spec, common_name)?;
    let certificate = params.signed_by(&key, &signer)?.pem();
    let mut chain = certificate;
    if !chain.ends_with('\n') {
        chain.push('\n');
    }
    chain.push_str(issuer.chain.trim_start());
    Ok(KeyedCert {
        certificate: chain,
        key: key_pem,
    })
}

/// The issuer's key as rcgen signs with it: ring reads PKCS#8 only, and
/// `openssl genrsa` before 3.0 (EMCO's scripts) writes PKCS#1.
fn issuer_key_pair(pem: &str) -> Result<KeyPair, PkiError> {
    let field = "tls.key";
    if pem.contains("-----BEGIN RSA PRIVATE KEY-----") {
        let key = rsa::RsaPrivateKey::from_pkcs1_pem(pem)
            .map_err(|e| invalid(field, format!("not a PKCS#1 RSA key: {e}")))?;
        let pkcs8 = key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| invalid(field, e))?;
        return KeyPair::from_pem(&pkcs8).map_err(|e| invalid(field, e));
    }
    if pem.contains("-----BEGIN EC PRIVATE KEY-----") {
        return Err(invalid(
            field,
            "is a SEC1 EC key; store it as PKCS#8 (openssl pkcs8 -topk8 -nocrypt)",
        ));
    }
    KeyPair::from_pem(pem)
        .map_err(|e| invalid(field, format!("not a private key wasmco can use: {e}")))
}

/// A new key of the spec's algorithm and size, and its PEM.
fn new_key(spec: &CaCertSpec) -> Result<(KeyPair, String), PkiError> {
    let info = &spec.csr_info;
    let generated = |alg| KeyPair::generate_for(alg).map_err(PkiError::from);
    let key = match (info.algorithm.public_key_algorithm, info.key_size) {
        (PublicKeyAlgorithm::Rsa, bits) => {
            let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits as usize)
                .map_err(|e| invalid("spec.csrInfo.keySize", e))?;
            let pkcs1 = key
                .to_pkcs1_pem(LineEnding::LF)
                .map_err(|e| invalid("spec.csrInfo.keySize", e))?;
            let pkcs8 = key
                .to_pkcs8_pem(LineEnding::LF)
                .map_err(|e| invalid("spec.csrInfo.keySize", e))?;
            return Ok((KeyPair::from_pem(&pkcs8)?, pkcs1.to_string()));
        }
        (PublicKeyAlgorithm::Ecdsa, 384) => generated(&rcgen::PKCS_ECDSA_P384_SHA384)?,
        (PublicKeyAlgorithm::Ecdsa, 256) => generated(&rcgen::PKCS_ECDSA_P256_SHA256)?,
        (PublicKeyAlgorithm::Ed25519, _) => generated(&rcgen::PKCS_ED25519)?,
        (algorithm, size) => {
            return Err(invalid(
                "spec.csrInfo",
                format!("no {algorithm:?} key of {size} bits"),
            ));
        }
    };
    let pem = key.serialize_pem();
    Ok((key, pem))
}

/// The certificate's subject, names, usages and validity.
fn params(spec: &CaCertSpec, common_name: &str) -> Result<CertificateParams, PkiError> {
    let info = &spec.csr_info;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(info, common_name);
    params.subject_alt_names = alt_names(info)?;
    params.is_ca = if spec.is_ca {
        IsCa::Ca(BasicConstraints::Unconstrained)
    } else {
        IsCa::ExplicitNoCa
    };
    for usage in key_usages(spec) {
        add_usage(&mut params, usage);
    }
    let valid_for = spec
        .valid_for()
        .map_err(|e| invalid("spec.duration", e.reason))?;
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::minutes(5);
    params.not_after =
        now + Duration::try_from(valid_for).map_err(|e| invalid("spec.duration", e))?;
    params.serial_number = Some(random_serial());
    params.use_authority_key_identifier_extension = true;
    Ok(params)
}

/// `CN=common_name` and the first value of each attribute the spec's
/// subject gives.
fn subject(info: &CsrInfo, common_name: &str) -> DistinguishedName {
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, common_name);
    let attribute_types = [
        DnType::CountryName,
        DnType::LocalityName,
        // postalCode and street, which rcgen does not name.
        DnType::CustomDnType(vec![2, 5, 4, 17]),
        DnType::StateOrProvinceName,
        DnType::CustomDnType(vec![2, 5, 4, 9]),
        DnType::OrganizationName,
        DnType::OrganizationalUnitName,
    ];
    for (ty, (_, values)) in attribute_types.into_iter().zip(info.subject.attributes()) {
        if let Some(value) = values.first() {
            subject.push(ty, value.as_str());
        }
    }
    subject
}

/// The spec's DNS names and email addresses, as subject alternative names.
fn alt_names(info: &CsrInfo) -> Result<Vec<SanType>, PkiError> {
    let mut names = Vec::new();
    for name in &info.dns_names {
        names.push(san_type(name).map_err(|reason| invalid("spec.csrInfo.dnsNames", reason))?);
    }
    for address in &info.email_addresses {
        names.push(SanType::Rfc822Name(address.as_str().try_into().map_err(
            |e: rcgen::Error| invalid("spec.csrInfo.emailAddresses", e),
        )?));
    }
    Ok(names)
}

/// The usages the spec asks for; cert-manager's default when it names
/// none, with what a CA needs to sign.
fn key_usages(spec: &CaCertSpec) -> Vec<KeyUsage> {
    let info = &spec.csr_info;
    if !info.key_usages.is_empty() {
        return info.key_usages.clone();
    }
    let mut usages = vec![KeyUsage::DigitalSignature, KeyUsage::KeyEncipherment];
    if spec.is_ca {
        usages.push(KeyUsage::CertSign);
    }
    usages
}

/// Adds `usage` to the key usages or the extended ones, where X.509 keeps it.
fn add_usage(params: &mut CertificateParams, usage: KeyUsage) {
    match usage {
        KeyUsage::DigitalSignature => params.key_usages.push(KeyUsagePurpose::DigitalSignature),
        KeyUsage::ContentCommitment => params.key_usages.push(KeyUsagePurpose::ContentCommitment),
        KeyUsage::KeyEncipherment => params.key_usages.push(KeyUsagePurpose::KeyEncipherment),
        KeyUsage::KeyAgreement => params.key_usages.push(KeyUsagePurpose::KeyAgreement),
        KeyUsage::DataEncipherment => params.key_usages.push(KeyUsagePurpose::DataEncipherment),
        KeyUsage::CertSign => params.key_usages.push(KeyUsagePurpose::KeyCertSign),
        KeyUsage::CrlSign => params.key_usages.push(KeyUsagePurpose::CrlSign),
        KeyUsage::ServerAuth => params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth),
        KeyUsage::ClientAuth => params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ClientAuth),
        KeyUsage::CodeSigning => params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::CodeSigning),
        KeyUsage::EmailProtection => params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::EmailProtection),
        KeyUsage::Timestamping => params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::TimeStamping),
        KeyUsage::OcspSigning => params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::OcspSigning),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use x509_parser::prelude::*;

    fn spec(algorithm: &str, key_size: u32) -> CaCertSpec {
        serde_json::from_value(json!({
            "issuerRef": {"name": "foo", "group": "cert-manager.io"},
            "issuingCluster": {"cluster": "issuer1", "clusterProvider": "p"},
            "duration": "2160h",
            "csrInfo": {"keySize": key_size, "algorithm": {"publicKeyAlgorithm": algorithm},
                        "subject": {"organization": {"names": ["emco"]}},
                        "dnsNames": ["mesh.example"]},
        }))
        .unwrap()
    }

    fn certificates(pem: &str) -> Vec<Vec<u8>> {
        Pem::iter_from_buffer(pem.as_bytes())
            .map(|p| p.unwrap().contents)
            .collect()
    }

    #[test]
    fn each_clusters_ca_chains_to_the_issuer_and_says_what_the_spec_asks() {
        let root = crate::new_ca("root").unwrap();
        for (algorithm, size) in [
            ("ECDSA", 256),
            ("ECDSA", 384),
            ("Ed25519", 0),
            ("RSA", 2048),
        ] {
            let issued = sign_for_cluster(
                IssuerSecret {
                    chain: &root.certificate,
                    key: &root.key,
                },
                &spec(algorithm, size),
                "cert0-p-c1-ca-foo",
            )
            .unwrap();
            let chain = certificates(&issued.certificate);
            assert_eq!(chain.len(), 2, "{algorithm}: the issuer follows");
            let (_, leaf) = X509Certificate::from_der(&chain[0]).unwrap();
            let (_, issuer) = X509Certificate::from_der(&chain[1]).unwrap();
            leaf.verify_signature(Some(issuer.public_key())).unwrap();
            assert!(leaf.is_ca());
            let subject = leaf.subject().to_string();
            assert!(subject.contains("CN=cert0-p-c1-ca-foo"), "{subject}");
            assert!(subject.contains("O=emco"), "{subject}");
            let days = (leaf.validity().not_after.timestamp()
                - leaf.validity().not_before.timestamp())
                / 86400;
            assert_eq!(days, 90);
            let key = KeyPair::from_pem(&issued.key)
                .or_else(|_| issuer_key_pair(&issued.key))
                .unwrap();
            assert_eq!(
                leaf.public_key().subject_public_key.data.as_ref(),
                key.public_key_raw()
            );
        }
    }

    #[test]
    fn an_rsa_issuer_with_a_pkcs1_key_as_openssl_writes_it_signs() {
        let root = crate::new_ca("root").unwrap();
        let root_secret = IssuerSecret {
            chain: &root.certificate,
            key: &root.key,
        };
        let intermediate = sign_for_cluster(root_secret, &spec("RSA", 2048), "foo").unwrap();
        assert!(
            intermediate
                .key
                .starts_with("-----BEGIN RSA PRIVATE KEY-----")
        );
        let issued = sign_for_cluster(
            IssuerSecret {
                chain: &intermediate.certificate,
                key: &intermediate.key,
            },
            &spec("ECDSA", 256),
            "leaf",
        )
        .unwrap();
        assert_eq!(certificates(&issued.certificate).len(), 3);
    }

    #[test]
    fn an_issuer_secret_that_cannot_sign_is_refused_by_its_key() {
        let root = crate::new_ca("root").unwrap();
        let other = crate::new_ca("other").unwrap();
        let mismatched = sign_for_cluster(
            IssuerSecret {
                chain: &root.certificate,
                key: &other.key,
            },
            &spec("ECDSA", 256),
            "x",
        );
        assert!(matches!(
            mismatched,
            Err(PkiError::Invalid {
                field: "tls.key",
                ..
            })
        ));
    }
}
