//! etcd as a [`KvStore`].

use super::connection::EtcdStore;
use super::failure::failed;
use super::write::MAX_TXN_OPS;
use crate::error::StoreError;
use crate::kv::{BatchOp, Expect, KvStore, OnChange};
use crate::metrics::StoreMetrics;

impl KvStore for EtcdStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(key)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.write(
            "put",
            Vec::new(),
            vec![BatchOp::Put(key.to_vec(), value.to_vec())],
        )
        .map(drop)
    }

    fn delete(&self, key: &[u8]) -> Result<(), StoreError> {
        self.write("delete", Vec::new(), vec![BatchOp::Delete(key.to_vec())])
            .map(drop)
    }

    fn visit_prefix(
        &self,
        prefix: &[u8],
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StoreError> {
        self.scan(prefix, visit)
    }

    fn batch(&self, ops: Vec<BatchOp>) -> Result<(), StoreError> {
        self.write("batch", Vec::new(), ops).map(drop)
    }

    fn batch_if(&self, expect: Vec<Expect>, ops: Vec<BatchOp>) -> Result<bool, StoreError> {
        self.write("batch", expect, ops)
    }

    fn watch_prefix(&self, prefix: &[u8], on_change: OnChange) -> Result<(), StoreError> {
        self.watch_from_now(prefix, on_change)
    }

    fn max_batch(&self) -> usize {
        MAX_TXN_OPS
    }

    fn metrics(&self) -> &StoreMetrics {
        &self.metrics
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        let mut maintenance = self.maintenance();
        let status = self
            .run(async move { maintenance.status().await })
            .map_err(failed("status"))?;
        Ok(u64::try_from(status.db_size()).unwrap_or_default())
    }
}
