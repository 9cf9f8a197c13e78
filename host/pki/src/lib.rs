//! Certificates the way the Eggo design hands them out: a CA per cluster
//! (plus kubeadm's front-proxy and etcd CAs and service-account key), an
//! `admin.kubeconfig`, the kubeadm certificate set for a control-plane node,
//! and node CSRs signed for joining. The [`kubeconfig`](mod@kubeconfig)
//! module decides what a kubeconfig handed to wasmco may ask of the host.
//!
//! Keys are ECDSA P-256 (rcgen with ring); service-account tokens signed with
//! it are ES256, which the API server accepts.

mod authority;
pub mod ca_cert;
mod cert;
mod client_kubeconfig;
mod error;
mod issue;
pub mod kubeconfig;
mod node;
mod tls;

pub use authority::ClusterPki;
pub use cert::{KeyedCert, Usage};
pub use client_kubeconfig::kubeconfig;
pub use error::PkiError;
pub use issue::{client_csr, issue, new_ca, new_key};
pub use tls::rustls_server;
