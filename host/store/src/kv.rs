//! The [`KvStore`] trait every engine implements, and the values its calls
//! take and give.

use std::sync::Arc;

use crate::error::StoreError;
use crate::metrics::StoreMetrics;

/// One change of an atomic batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Set `key` to `value`.
    Put(Vec<u8>, Vec<u8>),
    /// Remove `key` (no error when absent).
    Delete(Vec<u8>),
}

/// A key and its value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// A condition of [`KvStore::batch_if`], checked in the same transaction
/// as the writes it guards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// `key` is not set.
    Absent(Vec<u8>),
    /// `key` holds exactly this value.
    Value(Vec<u8>, Vec<u8>),
}

/// What a watch saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The key was set or removed, by this process or another sharing the store.
    Key(Vec<u8>),
    /// Changes may have been missed (the connection to the store broke):
    /// whatever was derived from the watched keys must be read again.
    Missed,
}

/// Called with each [`Change`] a watch sees.
pub type OnChange = Arc<dyn Fn(Change) + Send + Sync>;

/// Keys and values are bytes; keys sort bytewise.
pub trait KvStore: Send + Sync + 'static {
    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;
    /// Sets `key`, durably.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError>;
    /// Removes `key`, durably; no error when absent.
    fn delete(&self, key: &[u8]) -> Result<(), StoreError>;
    /// Every entry whose key starts with `prefix`, in key order.
    fn scan_prefix(&self, prefix: &[u8]) -> Result<Vec<Entry>, StoreError> {
        let mut entries = Vec::new();
        self.visit_prefix(prefix, &mut |key, value| {
            entries.push((key.to_vec(), value.to_vec()))
        })?;
        Ok(entries)
    }
    /// Calls `visit` with every entry whose key starts with `prefix`, in key
    /// order, without copying them.
    fn visit_prefix(
        &self,
        prefix: &[u8],
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StoreError>;
    /// Applies all of `ops` or none, durably.
    fn batch(&self, ops: Vec<BatchOp>) -> Result<(), StoreError>;
    /// Applies all of `ops`, durably, if every one of `expect` holds at
    /// that moment; `false` (and nothing written) if one does not. Several
    /// processes sharing one store make their read-then-write changes with
    /// it, since a lock in one process does not hold back another.
    fn batch_if(&self, expect: Vec<Expect>, ops: Vec<BatchOp>) -> Result<bool, StoreError>;
    /// Calls `on_change` for every later change of a key under `prefix`,
    /// whoever makes it, for as long as the store is open.
    fn watch_prefix(&self, prefix: &[u8], on_change: OnChange) -> Result<(), StoreError>;
    /// Applies all of `ops` or none, without waiting for the disk: for data
    /// that can be derived again after a crash (rsync's progress), where an
    /// fsync per write would cost more than the work it records.
    fn batch_lazy(&self, ops: Vec<BatchOp>) -> Result<(), StoreError> {
        self.batch(ops)
    }
    /// The most changes one batch may hold (etcd's transactions are
    /// bounded); larger ones are refused whole.
    fn max_batch(&self) -> usize {
        usize::MAX
    }
    /// Bytes the store takes on disk.
    fn size_on_disk(&self) -> Result<u64, StoreError>;
    /// How long its writes take to become durable.
    fn metrics(&self) -> &StoreMetrics;
}
