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

/// The hex SHA-256 of `bytes`.
pub fn hex_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The label value that names a deployment's objects on the clusters, by
/// its key: 40 hex digits (160 bits) of the key's SHA-256, well inside a
/// label value's 63 characters, and apart for keys that read alike.
pub fn owner_label(key: &str) -> String {
    let mut hex = hex_digest(key.as_bytes());
    hex.truncate(40);
    hex
}

/// The name of a cluster-scoped object logical cloud `project`/`cloud`
/// makes (its user's ClusterRole, say). Such names are shared by every
/// project's clouds, so they come from a hash of the cloud's key: `a`'s
/// cloud `b-c` and `a-b`'s cloud `c` would read alike joined.
pub fn cloud_object_name(project: &str, cloud: &str, what: &str) -> String {
    let key = format!("{project}/{CONTEXT_COMPOSITE_APP}/{cloud}");
    format!("wasmco-{}-{what}", &owner_label(&key)[..16])
}
