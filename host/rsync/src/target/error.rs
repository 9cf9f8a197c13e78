//! Why a target could not do what was asked.

/// Why a target could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The cluster could not be reached (worth retrying).
    #[error("cluster unreachable: {0}")]
    Unreachable(#[source] kube::Error),
    /// The cluster answered with an error status.
    #[error("{code} {reason}: {message}")]
    Refused {
        /// The HTTP status: 429 and 5xx are worth retrying.
        code: u16,
        /// Kubernetes' reason (`Conflict`, `Invalid`, …).
        reason: String,
        /// Its message.
        message: String,
    },
    /// The directory target could not write or remove a file.
    #[error("{path}: {source}")]
    Directory {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The cluster's kubeconfig is unusable.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// The cluster took longer than this to answer.
    #[error("no answer in {0:?}")]
    TimedOut(std::time::Duration),
    /// Something this work needs is still being made elsewhere (a
    /// logical cloud user's certificate the cluster has yet to issue).
    #[error("{0}")]
    NotYet(String),
}

impl SyncError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            SyncError::Unreachable(_) | SyncError::TimedOut(_) | SyncError::NotYet(_) => true,
            SyncError::Refused { code, .. } => *code == 429 || *code >= 500,
            SyncError::Directory { .. } | SyncError::Config(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_worth_retrying_is_decided_by_the_status_code() {
        let refused = |code| SyncError::Refused {
            code,
            reason: "r".into(),
            message: "5 is not a status".into(),
        };
        assert!(refused(429).is_transient());
        assert!(refused(503).is_transient());
        assert!(!refused(409).is_transient());
        assert!(!refused(422).is_transient());
        assert_eq!(refused(409).to_string(), "409 r: 5 is not a status");
    }
}
