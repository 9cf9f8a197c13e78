//! The part of kube-controller-manager a virtual cluster plays for
//! CertificateSigningRequests: once a request for the
//! `kubernetes.io/kube-apiserver-client` signer is approved, it issues the
//! client certificate from the cluster's own CA, as the csrsigning
//! controller does. Other signers are left alone, as a cluster without
//! their controller leaves them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};

/// The signer a virtual cluster issues certificates for.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// The cluster's CA.
pub(crate) struct Signer {
    certificate: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Signer {
    pub(crate) fn new(cluster: &str) -> Result<Self, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{cluster}-ca"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key)?.pem();
        Ok(Signer {
            certificate,
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate, as PEM.
    pub(crate) fn certificate(&self) -> &str {
        &self.certificate
    }

    /// The status `csr` has after its conditions became `conditions`: with a
    /// certificate once approved (or a `Failed` condition saying why not).
    pub(crate) fn after_approval(&self, csr: &Value, conditions: Value) -> Value {
        let mut status = match &csr["status"] {
            Value::Object(status) => Value::Object(status.clone()),
            _ => json!({}),
        };
        status["conditions"] = conditions;
        let approved = condition(&status, "Approved");
        let denied = condition(&status, "Denied");
        let issued = status["certificate"]
            .as_str()
            .is_some_and(|c| !c.is_empty());
        if approved && !denied && !issued && csr["spec"]["signerName"] == CLIENT_SIGNER {
            match self.sign(csr) {
                Ok(pem) => status["certificate"] = json!(STANDARD.encode(pem)),
                Err(reason) => {
                    if let Some(list) = status["conditions"].as_array_mut() {
                        list.push(json!({"type": "Failed", "status": "True",
                            "reason": "SigningFailed", "message": reason}));
                    }
                }
            }
        }
        status
    }

    /// A client certificate for the request's subject and key.
    fn sign(&self, csr: &Value) -> Result<String, String> {
        let encoded = csr["spec"]["request"]
            .as_str()
            .ok_or("spec.request is missing")?;
        let pem = STANDARD
            .decode(encoded)
            .map_err(|e| format!("spec.request is not base64: {e}"))?;
        let pem = String::from_utf8(pem).map_err(|_| "spec.request is not a PEM CSR")?;
        let request = CertificateSigningRequestParams::from_pem(&pem)
            .map_err(|e| format!("spec.request is not a valid CSR: {e}"))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = request.params.distinguished_name.clone();
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params
            .signed_by(&request.public_key, &self.issuer)
            .map(|certificate| certificate.pem())
            .map_err(|e| e.to_string())
    }
}

fn condition(status: &Value, kind: &str) -> bool {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(signer: &str) -> Value {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, "alice");
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        json!({"spec": {"request": STANDARD.encode(pem), "signerName": signer}})
    }

    fn approved() -> Value {
        json!([{"type": "Approved", "status": "True"}])
    }

    #[test]
    fn an_approved_client_request_gets_a_certificate_from_the_cluster_ca() {
        let signer = Signer::new("east").unwrap();
        let status = signer.after_approval(&request(CLIENT_SIGNER), approved());
        let pem = STANDARD
            .decode(status["certificate"].as_str().unwrap())
            .unwrap();
        let (_, der) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
        let certificate = der.parse_x509().unwrap();
        let (_, ca_der) =
            x509_parser::pem::parse_x509_pem(signer.certificate().as_bytes()).unwrap();
        let ca = ca_der.parse_x509().unwrap();
        certificate.verify_signature(Some(ca.public_key())).unwrap();
        let common_name = certificate.subject().iter_common_name().next().unwrap();
        assert_eq!(common_name.as_str().unwrap(), "alice");
    }

    #[test]
    fn nothing_is_issued_before_approval_for_other_signers_or_after_denial() {
        let signer = Signer::new("east").unwrap();
        let pending = signer.after_approval(&request(CLIENT_SIGNER), json!([]));
        assert!(pending.get("certificate").is_none(), "{pending}");
        let other = signer.after_approval(&request("example.com/other"), approved());
        assert!(other.get("certificate").is_none(), "{other}");
        let denied =
            json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]);
        let refused = signer.after_approval(&request(CLIENT_SIGNER), denied);
        assert!(refused.get("certificate").is_none(), "{refused}");
        let garbled = json!({"spec": {"request": "bm90IGEgY3Ny", "signerName": CLIENT_SIGNER}});
        let failed = signer.after_approval(&garbled, approved());
        assert_eq!(failed["conditions"][1]["type"], "Failed", "{failed}");
    }
}
