//! The [`KvStore`] over etcd, for several wasmco hosts sharing one store.
//!
//! The trait is synchronous and is called from tokio workers as well as
//! blocking threads, so the store drives etcd-client on a runtime of its
//! own and each call waits on a channel for its answer (a runtime's
//! `block_on` would panic inside another runtime).

use std::future::Future;
use std::sync::mpsc;

use etcd_client::{Client, GetOptions, KvClient, MaintenanceClient, Txn, TxnOp};

use crate::{BatchOp, KvStore, StoreError};

/// Keys read per range request when scanning a prefix: bounded answers,
/// well under gRPC's 4 MiB default.
const PAGE: i64 = 512;

/// etcd's default `--max-txn-ops`: a batch larger than this is refused
/// rather than split, which would lose its atomicity.
pub const MAX_TXN_OPS: usize = 128;

/// etcd as a [`KvStore`].
pub struct EtcdStore {
    runtime: tokio::runtime::Runtime,
    kv: KvClient,
    maintenance: MaintenanceClient,
}

fn failed(operation: &'static str) -> impl Fn(etcd_client::Error) -> StoreError {
    move |error| {
        let reason = format!("etcd: {error}");
        let unreachable = match &error {
            etcd_client::Error::TransportError(_) => true,
            etcd_client::Error::GRpcStatus(status) => matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
            ),
            _ => false,
        };
        if unreachable {
            StoreError::Unavailable { operation, reason }
        } else {
            StoreError::Io { operation, reason }
        }
    }
}

impl EtcdStore {
    /// Connects to the etcd cluster at `endpoints` (`http://host:2379`).
    pub fn connect(endpoints: &[String]) -> Result<Self, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("etcd-store")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Open {
                path: endpoints.join(",").into(),
                reason: e.to_string(),
            })?;
        let endpoints = endpoints.to_vec();
        // Bounded, so a request while etcd is away fails (and can be
        // retried) instead of holding its caller.
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(std::time::Duration::from_secs(2))
            .with_timeout(std::time::Duration::from_secs(5));
        let client = runtime
            .block_on(Client::connect(endpoints.clone(), Some(options)))
            .map_err(|e| StoreError::Open {
                path: endpoints.join(",").into(),
                reason: format!("etcd: {e}"),
            })?;
        Ok(EtcdStore {
            kv: client.kv_client(),
            maintenance: client.maintenance_client(),
            runtime,
        })
    }

    /// Runs `work` on the store's runtime and waits for its answer.
    fn run<T: Send + 'static>(&self, work: impl Future<Output = T> + Send + 'static) -> T {
        let (answer, answered) = mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = answer.send(work.await);
        });
        // The task ends by sending, unless the runtime shut down under it.
        answered
            .recv()
            .unwrap_or_else(|_| panic!("the etcd store's runtime stopped"))
    }
}

/// The first key after every key that starts with `prefix` (etcd's
/// range end for a prefix); `\0` (to the end) when there is none.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

impl KvStore for EtcdStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let mut kv = self.kv.clone();
        let key = key.to_vec();
        let answer = self
            .run(async move { kv.get(key, None).await })
            .map_err(failed("get"))?;
        Ok(answer.kvs().first().map(|entry| entry.value().to_vec()))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let mut kv = self.kv.clone();
        let (key, value) = (key.to_vec(), value.to_vec());
        self.run(async move { kv.put(key, value, None).await })
            .map(drop)
            .map_err(failed("put"))
    }

    fn delete(&self, key: &[u8]) -> Result<(), StoreError> {
        let mut kv = self.kv.clone();
        let key = key.to_vec();
        self.run(async move { kv.delete(key, None).await })
            .map(drop)
            .map_err(failed("delete"))
    }

    fn visit_prefix(
        &self,
        prefix: &[u8],
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), StoreError> {
        let end = prefix_end(prefix);
        let mut from = prefix.to_vec();
        loop {
            let mut kv = self.kv.clone();
            let (key, range_end) = (from.clone(), end.clone());
            let answer = self
                .run(async move {
                    let options = GetOptions::new().with_range(range_end).with_limit(PAGE);
                    kv.get(key, Some(options)).await
                })
                .map_err(failed("scan"))?;
            for entry in answer.kvs() {
                visit(entry.key(), entry.value());
            }
            match answer.kvs().last() {
                Some(last) if answer.more() => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => return Ok(()),
            }
        }
    }

    fn batch(&self, ops: Vec<BatchOp>) -> Result<(), StoreError> {
        if ops.len() > MAX_TXN_OPS {
            return Err(StoreError::Io {
                operation: "batch",
                reason: format!(
                    "{} changes in one transaction; etcd takes at most {MAX_TXN_OPS} \
                     (its --max-txn-ops)",
                    ops.len()
                ),
            });
        }
        let ops: Vec<TxnOp> = ops
            .into_iter()
            .map(|op| match op {
                BatchOp::Put(key, value) => TxnOp::put(key, value, None),
                BatchOp::Delete(key) => TxnOp::delete(key, None),
            })
            .collect();
        let mut kv = self.kv.clone();
        self.run(async move { kv.txn(Txn::new().and_then(ops)).await })
            .map(drop)
            .map_err(failed("batch"))
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        let mut maintenance = self.maintenance.clone();
        let status = self
            .run(async move { maintenance.status().await })
            .map_err(failed("status"))?;
        Ok(u64::try_from(status.db_size()).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn a_prefixs_range_ends_after_its_last_key() {
        assert_eq!(prefix_end(b"ctx/"), b"ctx0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }
}
