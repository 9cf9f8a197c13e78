//! A certificate as wasmco hands it out, and what one is for.

use serde::{Deserialize, Serialize};

/// A certificate with its private key, as PEM.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KeyedCert {
    /// The certificate.
    pub certificate: String,
    /// Its private key (PKCS#8).
    pub key: String,
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
