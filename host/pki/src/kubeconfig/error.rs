//! Why a kubeconfig was refused.

/// Why a kubeconfig was refused, naming the field inside it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct KubeconfigError {
    /// The field's path inside the kubeconfig (`users[0].user.exec`).
    pub field: String,
    /// Why it is refused.
    pub reason: String,
}

impl KubeconfigError {
    pub(super) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        KubeconfigError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
