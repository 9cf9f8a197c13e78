//! EMCO's ca-certs: each cluster a caCert's groups name gets its own
//! intermediate CA, signed by a cert-manager CA issuer on the issuing
//! cluster, then that CA as a ClusterIssuer and as Istio's signer.
//!
//! Enrollment signs: wasmco reads the issuer's CA secret through the
//! issuing cluster's kubeconfig and signs each cluster's certificate
//! itself, where EMCO puts CertificateRequests on the issuing cluster and
//! waits for its cert-manager (the certificate is the same; nothing is left
//! there). The keys and certificates are sealed in the store.
//!
//! Distribution deploys: a one-app context, handed to rsync as a logical
//! cloud's is, gives each cluster the CA's Secret, a ClusterIssuer using
//! it, a KNCC ConfigCtrl adding it to Istio's mesh config, and (for a
//! project's caCert) a ProxyConfig naming it in each logical cloud's
//! namespace.

mod distribution;
mod enrollment;
mod lifecycle;
mod targets;

pub(crate) use lifecycle::CaCerts;
