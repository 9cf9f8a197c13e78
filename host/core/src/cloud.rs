//! What the orchestrator and rsync both know of a logical cloud's stored
//! parts: where its user's key and kubeconfigs are kept, and how its own
//! context is told apart from a DIG's.

/// The composite app of a logical cloud's own context. `_` cannot start a
/// composite app's name, so no DIG's context has it.
pub const CONTEXT_COMPOSITE_APP: &str = "_logical-cloud";

/// The secret of a cluster reference holding the cloud user's kubeconfig
/// for that cluster.
pub const KUBECONFIG_SECRET: &str = "kubeconfig";

/// The secret of a logical cloud holding its user's private key (PEM),
/// made at its first instantiate and kept, as EMCO keeps it.
pub const USER_KEY_SECRET: &str = "user-key";

/// The secret of a logical cloud holding its user's certificate signing
/// request (PEM): made once, so that every cluster (and every
/// re-instantiate) gets the same request, which the CSR API cannot change.
pub const USER_CSR_SECRET: &str = "user-csr";

/// The kind rsync approves and reads a certificate back from.
pub const CSR_KIND: &str = "CertificateSigningRequest";

/// The annotation that lets a resource take over an object on a cluster
/// that wasmco did not make (rsync gives it back at the end instead of
/// deleting it).
pub const FORCE_ANNOTATION: &str = "wasmco.io/force-apply";
