//! The list cache: what reads answer from until the next write.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;

/// Collections as JSON arrays and items as JSON, ready to send. Any write,
/// here or by another host, empties it: writes are rare next to reads, and
/// a whole-cache flush cannot miss a dependency.
#[derive(Default)]
pub(super) struct ListCache {
    /// Bumped after every write, before the cache is emptied, so a read
    /// while a write landed is not cached (see [`ResourceDb::list_json`]).
    pub(super) generation: AtomicU64,
    arrays: Mutex<HashMap<Vec<u8>, Bytes>>,
    items: Mutex<HashMap<Vec<u8>, Bytes>>,
}

/// Items kept at most; past it the item cache starts again empty.
pub(super) const CACHED_ITEMS: usize = 16_384;

impl ListCache {
    pub(super) fn arrays(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Bytes>> {
        self.arrays.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn items(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Bytes>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.arrays().clear();
        self.items().clear();
    }
}
