//! The context store from rsync's async code. On etcd every store call
//! waits on the network (`EtcdStore` hands it to its client's runtime and
//! waits on a channel): made on a tokio worker, it would hold that worker
//! and every task queued behind it. Each call runs on the blocking pool.

use wasmco_store::StoreError;
use wasmco_store::appcontext::{ContextError, ContextStore};

/// Runs `call` against `contexts` on the blocking pool.
pub(crate) async fn off_the_workers<T: Send + 'static>(
    contexts: &ContextStore,
    call: impl FnOnce(&ContextStore) -> Result<T, ContextError> + Send + 'static,
) -> Result<T, ContextError> {
    let contexts = contexts.clone();
    match tokio::task::spawn_blocking(move || call(&contexts)).await {
        Ok(answer) => answer,
        // As if the call had been made here.
        Err(failed) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
        Err(_) => Err(ContextError::Store(StoreError::Unavailable {
            operation: "context store call",
            reason: "the runtime is shutting down".into(),
        })),
    }
}
