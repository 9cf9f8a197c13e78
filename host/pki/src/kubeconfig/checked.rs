//! A kubeconfig that passed the policy, and the kube-rs client config built
//! from it.

use kube::config::AuthInfo;

use super::error::KubeconfigError;
use super::policy::KubeconfigPolicy;
use super::server::{Host, ServerUrl};
use crate::cert::KeyedCert;
use crate::client_kubeconfig::client_kubeconfig;

/// A kubeconfig that passed [`KubeconfigPolicy::check`]: the current
/// context's server, CA and inline credentials.
#[derive(Debug, Clone)]
pub struct CheckedKubeconfig {
    pub(super) server_text: String,
    pub(super) server: ServerUrl,
    pub(super) namespace: Option<String>,
    pub(super) certificate_authority_data: Option<String>,
    pub(super) insecure_skip_tls_verify: bool,
    pub(super) tls_server_name: Option<String>,
    pub(super) proxy_url: Option<String>,
    pub(super) user: AuthInfo,
}

impl CheckedKubeconfig {
    /// The API server's URL as the kubeconfig gives it.
    pub fn server(&self) -> &str {
        &self.server_text
    }

    /// The CA to trust (base64 PEM), when given.
    pub fn certificate_authority_data(&self) -> Option<&str> {
        self.certificate_authority_data.as_deref()
    }

    /// A kubeconfig reaching the same server with the same trust (CA, TLS
    /// server name, proxy) as another user: `client`'s certificate, in
    /// `namespace` by default.
    pub fn for_user(
        &self,
        cluster: &str,
        user: &str,
        client: &KeyedCert,
        namespace: &str,
    ) -> String {
        let trust = kube::config::Cluster {
            server: Some(self.server_text.clone()),
            certificate_authority_data: self.certificate_authority_data.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify.then_some(true),
            tls_server_name: self.tls_server_name.clone(),
            proxy_url: self.proxy_url.clone(),
            ..kube::config::Cluster::default()
        };
        client_kubeconfig(cluster, trust, user, client, Some(namespace))
    }

    /// What is accepted but worth an operator's attention.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.insecure_skip_tls_verify {
            warnings.push(
                "insecure-skip-tls-verify: the API server's certificate is not verified, so \
                 anyone between this host and the cluster can read its credentials"
                    .to_owned(),
            );
        }
        if self.proxy_url.is_some() {
            warnings.push("proxy-url: the cluster is reached through a proxy".to_owned());
        }
        warnings
    }

    /// The kube-rs client configuration, after the policy is checked again
    /// (it may have changed since upload) and the server's name is resolved
    /// and every address it has is checked.
    pub async fn client_config(
        &self,
        policy: &KubeconfigPolicy,
    ) -> Result<kube::Config, KubeconfigError> {
        let field = "server";
        policy
            .check_host(&self.server.host)
            .map_err(|reason| KubeconfigError::new(field, reason))?;
        if self.proxy_url.is_some() && !policy.allow_proxy {
            return Err(KubeconfigError::new(
                "proxy-url",
                "proxies are refused on this server",
            ));
        }
        if let Host::Name(name) = &self.server.host {
            let addresses = tokio::net::lookup_host((name.as_str(), self.server.port))
                .await
                .map_err(|e| KubeconfigError::new(field, format!("cannot resolve {name}: {e}")))?;
            for address in addresses {
                if !policy.allows(address.ip()) {
                    return Err(KubeconfigError::new(
                        field,
                        format!(
                            "{name} resolves to {}, in a network this server does not reach",
                            address.ip()
                        ),
                    ));
                }
            }
        }
        let url = self
            .server_text
            .parse::<http::Uri>()
            .map_err(|e| KubeconfigError::new(field, e.to_string()))?;
        let mut config = kube::Config::new(url);
        config.default_namespace = self
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        config.root_cert = self
            .certificate_authority_data
            .as_deref()
            .map(der_certificates)
            .transpose()?;
        config.accept_invalid_certs = self.insecure_skip_tls_verify;
        config.tls_server_name = self.tls_server_name.clone();
        config.proxy_url = self
            .proxy_url
            .as_deref()
            .map(|p| p.parse::<http::Uri>())
            .transpose()
            .map_err(|e| KubeconfigError::new("proxy-url", e.to_string()))?;
        config.auth_info = self.user.clone();
        Ok(config)
    }
}

/// A cluster's `status`: the server its kubeconfig names and what is
/// accepted but worth a warning; an error when the kubeconfig is refused.
pub fn cluster_status(
    policy: &KubeconfigPolicy,
    kubeconfig: &[u8],
) -> Result<serde_json::Value, KubeconfigError> {
    let checked = policy.check(kubeconfig)?;
    Ok(serde_json::json!({
        "kubeconfig": {"server": checked.server(), "warnings": checked.warnings()}
    }))
}

/// The DER certificates of a base64 PEM bundle.
fn der_certificates(base64_pem: &str) -> Result<Vec<Vec<u8>>, KubeconfigError> {
    use base64::Engine;
    let field = "certificate-authority-data";
    let pem = base64::engine::general_purpose::STANDARD
        .decode(base64_pem.trim())
        .map_err(|e| KubeconfigError::new(field, format!("not base64: {e}")))?;
    let certificates: Vec<Vec<u8>> =
        <rustls::pki_types::CertificateDer as rustls::pki_types::pem::PemObject>::pem_slice_iter(
            &pem,
        )
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<_, _>>()
        .map_err(|e| KubeconfigError::new(field, format!("not PEM certificates: {e:?}")))?;
    if certificates.is_empty() {
        return Err(KubeconfigError::new(field, "holds no certificate"));
    }
    Ok(certificates)
}
