//! The TLS server configuration the host serves its API with.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::cert::KeyedCert;
use crate::error::{PkiError, invalid};

/// A rustls server configuration serving `identity`, asking clients for a
/// certificate from `client_ca` when given (and refusing any other).
pub fn rustls_server(
    identity: &KeyedCert,
    client_ca: Option<&str>,
) -> Result<Arc<rustls::ServerConfig>, PkiError> {
    let tls = |reason: Box<dyn std::error::Error + Send + Sync>| invalid("tls", reason);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = vec![
        CertificateDer::from_pem_slice(identity.certificate.as_bytes())
            .map_err(|e| tls(e.into()))?,
    ];
    let key = PrivateKeyDer::from_pem_slice(identity.key.as_bytes()).map_err(|e| tls(e.into()))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(e.into()))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(ca.as_bytes()).map_err(|e| tls(e.into()))?)
                .map_err(|e| tls(e.into()))?;
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| tls(e.into()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| tls(e.into()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
