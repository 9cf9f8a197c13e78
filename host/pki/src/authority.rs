//! A cluster's authorities: its CA (made here or imported), kubeadm's
//! front-proxy and etcd CAs and service-account key, and what they sign
//! for an admin.

use rcgen::{Issuer, KeyPair};
use serde::{Deserialize, Serialize};

use crate::cert::{KeyedCert, Usage};
use crate::client_kubeconfig::kubeconfig;
use crate::error::{PkiError, invalid};
use crate::issue::{issue, new_ca};

/// One cluster's authorities; kept sealed, only certificates leave (its
/// Debug form leaves the keys out).
#[derive(Clone, Serialize, Deserialize)]
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

impl std::fmt::Debug for ClusterPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterPki")
            .field("ca", &self.ca)
            .field("front_proxy_ca", &self.front_proxy_ca)
            .field("etcd_ca", &self.etcd_ca)
            .field("service_account_key", &"(sealed)")
            .finish()
    }
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
        Issuer::from_ca_cert_pem(certificate, &pair).map_err(|e| invalid("certificate", e))?;
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

    /// `sa.pub`: the public half of the service-account key, which API
    /// servers check tokens with.
    pub fn service_account_public_key(&self) -> Result<String, PkiError> {
        Ok(KeyPair::from_pem(&self.service_account_key)?.public_key_pem())
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
