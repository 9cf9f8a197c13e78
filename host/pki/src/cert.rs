//! A certificate as wasmco hands it out, and what one is for.

use serde::{Deserialize, Serialize};

/// A certificate with its private key, as PEM. Its Debug form leaves the
/// key out, so no log or error shows it.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KeyedCert {
    /// The certificate.
    pub certificate: String,
    /// Its private key (PKCS#8).
    pub key: String,
}

impl std::fmt::Debug for KeyedCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedCert")
            .field("certificate", &self.certificate)
            .field("key", &"(sealed)")
            .finish()
    }
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
