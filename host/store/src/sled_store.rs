//! The embedded default store: sled 0.34 in one directory.

use std::path::Path;

use sled::transaction::{ConflictableTransactionError, TransactionError};

use super::{BatchOp, Change, Expect, KvStore, OnChange, StoreError};

/// A sled database; cheap to clone.
#[derive(Clone)]
pub struct SledStore {
    db: sled::Db,
    metrics: crate::metrics::StoreMetrics,
}

fn io(operation: &'static str) -> impl Fn(sled::Error) -> StoreError {
    move |e| StoreError::Io {
        operation,
        reason: e.to_string(),
    }
}

/// sled's page cache. Its default (1 GiB) is the whole memory a host
/// serving a fleet of 1,000 clusters is to stay within; past this cap
/// reads come from the OS's page cache.
const CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl SledStore {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_BYTES)
            .open()
            .map_err(|e| StoreError::Open {
                path: dir.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(SledStore {
            db,
            metrics: Default::default(),
        })
    }

    fn durable(&self) -> Result<(), StoreError> {
        self.metrics
            .flushed(|| self.db.flush())
            .map(drop)
            .map_err(io("flush"))
    }
}

impl KvStore for SledStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.db.get(key).map_err(io("get"))?.map(|v| v.to_vec()))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.db.insert(key, value).map_err(io("put"))?;
        self.durable()
    }

    fn delete(&self, key: &[u8]) -> Result<(), StoreError> {
        self.db.remove(key).map_err(io("delete"))?;
        self.durable()
    }

    fn visit_prefix(
        &self,
        prefix: &[u8],
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StoreError> {
        for entry in self.db.scan_prefix(prefix) {
            let (key, value) = entry.map_err(io("scan"))?;
            visit(&key, &value);
        }
        Ok(())
    }

    fn batch(&self, ops: Vec<BatchOp>) -> Result<(), StoreError> {
        self.batch_lazy(ops)?;
        self.durable()
    }

    fn batch_lazy(&self, ops: Vec<BatchOp>) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for op in ops {
            match op {
                BatchOp::Put(k, v) => batch.insert(k, v),
                BatchOp::Delete(k) => batch.remove(k),
            }
        }
        self.db.apply_batch(batch).map_err(io("batch"))
    }

    fn batch_if(&self, expect: Vec<Expect>, ops: Vec<BatchOp>) -> Result<bool, StoreError> {
        let applied = self.db.transaction(|tx| {
            for condition in &expect {
                let holds = match condition {
                    Expect::Absent(key) => tx.get(key)?.is_none(),
                    Expect::Value(key, value) => tx.get(key)?.as_deref() == Some(value.as_slice()),
                };
                if !holds {
                    return Err(ConflictableTransactionError::Abort(()));
                }
            }
            for op in &ops {
                match op {
                    BatchOp::Put(key, value) => drop(tx.insert(key.as_slice(), value.as_slice())?),
                    BatchOp::Delete(key) => drop(tx.remove(key.as_slice())?),
                }
            }
            Ok(())
        });
        match applied {
            Ok(()) => self.durable().map(|()| true),
            Err(TransactionError::Abort(())) => Ok(false),
            Err(TransactionError::Storage(error)) => Err(io("batch")(error)),
        }
    }

    fn watch_prefix(&self, prefix: &[u8], on_change: OnChange) -> Result<(), StoreError> {
        let subscriber = self.db.watch_prefix(prefix);
        std::thread::Builder::new()
            .name("sled-watch".into())
            .spawn(move || {
                // Ends when the database is dropped.
                for event in subscriber {
                    on_change(Change::Key(event.key().to_vec()));
                }
            })
            .map(drop)
            .map_err(|e| StoreError::Io {
                operation: "watch",
                reason: e.to_string(),
            })
    }

    fn metrics(&self) -> &crate::metrics::StoreMetrics {
        &self.metrics
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.db.size_on_disk().map_err(io("size"))
    }
}
