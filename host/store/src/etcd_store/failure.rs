//! What an etcd failure means for the caller: worth trying again, too
//! large, or failed.

use crate::error::StoreError;

/// The [`StoreError`] for a failed etcd request made for `operation`.
pub(super) fn failed(operation: &'static str) -> impl Fn(etcd_client::Error) -> StoreError {
    move |error| {
        let reason = format!("etcd: {error}");
        let unreachable = match &error {
            etcd_client::Error::TransportError(_) => true,
            // Cancelled: the connection closed under a request in flight
            // (etcd went away mid-call); this client cancels nothing itself.
            etcd_client::Error::GRpcStatus(status) => matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            ),
            _ => false,
        };
        let too_large = matches!(&error, etcd_client::Error::GRpcStatus(status)
            if status.message().contains("too large") || status.message().contains("too many operations"));
        if unreachable {
            StoreError::Unavailable { operation, reason }
        } else if too_large {
            StoreError::TooLarge {
                reason: format!(
                    "{reason} (etcd takes requests up to its --max-request-bytes, \
                     1.5 MiB unless raised)"
                ),
            }
        } else {
            StoreError::Io { operation, reason }
        }
    }
}
