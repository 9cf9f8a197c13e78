//! The database handle, and how its writes are serialised across every
//! host sharing the store.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::cache::ListCache;
use super::error::DbError;
use crate::kv::{BatchOp, Change, Expect, KvStore};
use crate::secrets::MasterKey;

/// The key every write moves on (see the module's notes).
const WRITES_KEY: &[u8] = b"meta/db-writes";

/// Times a write's checks are run again after other hosts' writes got in
/// first, before it is refused as busy.
const WRITE_ATTEMPTS: u32 = 64;

/// The API's resources.
#[derive(Clone)]
pub struct ResourceDb {
    pub(super) store: Arc<dyn KvStore>,
    writes: Arc<Mutex<()>>,
    pub(super) lists: Arc<ListCache>,
    pub(super) master_key: Option<Arc<MasterKey>>,
}

impl ResourceDb {
    /// The database over `store`.
    pub fn new(store: Arc<dyn KvStore>) -> Self {
        let lists = Arc::<ListCache>::default();
        let watched = Arc::downgrade(&lists);
        let watching = store.watch_prefix(
            WRITES_KEY,
            Arc::new(move |_: Change| {
                if let Some(lists) = watched.upgrade() {
                    lists.invalidate();
                }
            }),
        );
        if let Err(error) = watching {
            // Alone on its store, the host drops its cache on its own writes.
            tracing::warn!(%error, "cannot watch the store for other hosts' writes");
        }
        ResourceDb {
            store,
            writes: Arc::new(Mutex::new(())),
            lists,
            master_key: None,
        }
    }

    /// The database over `store`, sealing secret files (kubeconfigs) and
    /// secrets under `master_key`.
    pub fn with_master_key(store: Arc<dyn KvStore>, master_key: Arc<MasterKey>) -> Self {
        ResourceDb {
            master_key: Some(master_key),
            ..Self::new(store)
        }
    }

    /// The underlying store (for size reports).
    pub fn store(&self) -> &Arc<dyn KvStore> {
        &self.store
    }

    /// Moves on whenever a write lands here or on another host sharing the
    /// store: what was derived from the database before may be stale.
    pub fn generation(&self) -> u64 {
        self.lists.generation.load(Ordering::SeqCst)
    }

    /// Runs `checked` (the write's checks, returning its changes) and
    /// writes what it returns as one batch, serialised with every other
    /// write of every host on the store; no changes, no write.
    pub(super) fn serialised<T>(
        &self,
        checked: impl Fn() -> Result<(Vec<BatchOp>, T), DbError>,
    ) -> Result<T, DbError> {
        // The guard protects no data of its own; a panic elsewhere leaves nothing half-done.
        let _guard = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        for attempt in 0..WRITE_ATTEMPTS {
            let seen = self.store.get(WRITES_KEY)?;
            let (mut ops, answer) = checked()?;
            if ops.is_empty() {
                return Ok(answer);
            }
            let count = seen
                .as_deref()
                .and_then(|bytes| std::str::from_utf8(bytes).ok()?.parse::<u64>().ok())
                .unwrap_or(0);
            ops.push(BatchOp::Put(
                WRITES_KEY.to_vec(),
                (count + 1).to_string().into_bytes(),
            ));
            let expect = match seen {
                Some(value) => Expect::Value(WRITES_KEY.to_vec(), value),
                None => Expect::Absent(WRITES_KEY.to_vec()),
            };
            if self.store.batch_if(vec![expect], ops)? {
                self.lists.invalidate();
                return Ok(answer);
            }
            // Another host wrote between the checks and the batch.
            std::thread::sleep(std::time::Duration::from_millis(
                fastrand::u64(1..=4) << attempt.min(4),
            ));
        }
        Err(DbError::Busy)
    }
}
