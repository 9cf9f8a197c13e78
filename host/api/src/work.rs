//! Work on what users send (parsing their files, checking kubeconfigs,
//! compiling components) runs here: on blocking threads, a bounded number
//! at a time, so that no upload, however nasty, holds up the async workers
//! that answer every other request.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::Semaphore;

use super::error::ApiError;

/// How long a request waits for a free slot before it is told to come back.
const QUEUE_WAIT: Duration = Duration::from_secs(30);

/// The bounded pool; cheap to clone.
#[derive(Clone)]
pub struct WorkPool {
    slots: Arc<Semaphore>,
}

impl Default for WorkPool {
    /// One slot per core but one, which is left to the async workers.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        WorkPool::new(cores.saturating_sub(1).max(1))
    }
}

impl WorkPool {
    /// A pool running `slots` jobs at once.
    pub fn new(slots: usize) -> Self {
        WorkPool {
            slots: Arc::new(Semaphore::new(slots.max(1))),
        }
    }

    /// Runs `work` on a blocking thread once a slot is free; a 503 when
    /// none frees up in time.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let slot = tokio::time::timeout(QUEUE_WAIT, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is busy checking other uploads; try again shortly",
                )
            })?
            .map_err(ApiError::internal)?;
        off_the_workers(move || {
            let _slot = slot;
            work()
        })
        .await
    }
}

/// Runs `work` on a blocking thread inside the span of the request that
/// asked for it, so that what it logs names the request's route and path.
pub(crate) async fn off_the_workers<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(work))
        .await
        .map_err(ApiError::internal)
}

/// A store operation run off the async workers, its error an API error.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, wasmco_store::db::DbError> + Send + 'static,
) -> Result<T, ApiError> {
    off_the_workers(work).await?.map_err(ApiError::from)
}
