//! The [`KvStore`] over etcd, for several wasmco hosts sharing one store.
//!
//! The trait is synchronous and is called from tokio workers as well as
//! blocking threads, so the store drives etcd-client on a runtime of its
//! own and each call waits on a channel for its answer (a runtime's
//! `block_on` would panic inside another runtime).

use std::future::Future;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, GetOptions, KvClient, MaintenanceClient, Txn, TxnOp, WatchOptions,
};

use crate::{BatchOp, Change, Expect, KvStore, OnChange, StoreError};

mod hosts;

pub use hosts::EtcdHosts;

/// Keys read per range request when scanning a prefix: bounded answers,
/// well under gRPC's 4 MiB default.
const PAGE: i64 = 512;

/// etcd's default `--max-txn-ops`: a batch larger than this is refused
/// rather than split, which would lose its atomicity.
pub const MAX_TXN_OPS: usize = 128;

/// How to reach etcd.
#[derive(Debug, Clone, Default)]
pub struct EtcdOptions {
    /// `http://host:2379` or `https://…`, one per member.
    pub endpoints: Vec<String>,
    /// User name and password, when etcd has authentication on.
    pub user: Option<(String, String)>,
    /// PEM of the CA that signed etcd's serving certificate (TLS).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM certificate and key this host shows etcd (TLS client auth).
    pub identity_pem: Option<(Vec<u8>, Vec<u8>)>,
}

/// etcd as a [`KvStore`]; cheap to clone.
#[derive(Clone)]
pub struct EtcdStore {
    connection: Arc<Connection>,
    metrics: crate::metrics::StoreMetrics,
}

/// The client and the runtime that drives it.
struct Connection {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

fn failed(operation: &'static str) -> impl Fn(etcd_client::Error) -> StoreError {
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

impl EtcdStore {
    /// Connects to the etcd cluster at `endpoints` (`http://host:2379`).
    pub fn connect(endpoints: &[String]) -> Result<Self, StoreError> {
        Self::connect_with(&EtcdOptions {
            endpoints: endpoints.to_vec(),
            ..EtcdOptions::default()
        })
    }

    /// Connects to etcd as `options` say.
    pub fn connect_with(options: &EtcdOptions) -> Result<Self, StoreError> {
        let refused = |reason: String| StoreError::Open {
            path: options.endpoints.join(",").into(),
            reason,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("etcd-store")
            .enable_all()
            .build()
            .map_err(|e| refused(e.to_string()))?;
        // Bounded, so a request while etcd is away fails (and can be
        // retried) instead of holding its caller.
        let mut connect = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(5));
        if let Some((user, password)) = &options.user {
            connect = connect.with_user(user, password);
        }
        if options.ca_pem.is_some() || options.identity_pem.is_some() {
            let mut tls = etcd_client::TlsOptions::new();
            if let Some(ca) = &options.ca_pem {
                tls = tls.ca_certificate(etcd_client::Certificate::from_pem(ca));
            }
            if let Some((certificate, key)) = &options.identity_pem {
                tls = tls.identity(etcd_client::Identity::from_pem(certificate, key));
            }
            connect = connect.with_tls(tls);
        }
        let client = runtime
            .block_on(Client::connect(options.endpoints.clone(), Some(connect)))
            .map_err(|e| refused(format!("etcd: {e}")))?;
        Ok(EtcdStore {
            connection: Arc::new(Connection { runtime, client }),
            metrics: Default::default(),
        })
    }

    fn kv(&self) -> KvClient {
        self.connection.client.kv_client()
    }

    fn maintenance(&self) -> MaintenanceClient {
        self.connection.client.maintenance_client()
    }

    /// Runs `work` on the store's runtime and waits for its answer.
    fn run<T: Send + 'static>(&self, work: impl Future<Output = T> + Send + 'static) -> T {
        let (answer, answered) = mpsc::sync_channel(1);
        self.connection.runtime.spawn(async move {
            let _ = answer.send(work.await);
        });
        // The task ends by sending, unless the runtime shut down under it.
        answered
            .recv()
            .unwrap_or_else(|_| panic!("the etcd store's runtime stopped"))
    }

    /// The transaction's operations for `ops`, refusing more than etcd
    /// takes. etcd refuses a key twice in one transaction, so each key
    /// keeps its last change, as a batch applied in order would leave it.
    fn txn_ops(ops: Vec<BatchOp>) -> Result<Vec<TxnOp>, StoreError> {
        let mut last = std::collections::HashMap::new();
        for (index, op) in ops.iter().enumerate() {
            let (BatchOp::Put(key, _) | BatchOp::Delete(key)) = op;
            last.insert(key.clone(), index);
        }
        let ops: Vec<BatchOp> = ops
            .into_iter()
            .enumerate()
            .filter(|(index, op)| {
                let (BatchOp::Put(key, _) | BatchOp::Delete(key)) = op;
                last.get(key) == Some(index)
            })
            .map(|(_, op)| op)
            .collect();
        if ops.len() > MAX_TXN_OPS {
            return Err(StoreError::TooLarge {
                reason: format!(
                    "{} changes in one transaction; etcd takes at most {MAX_TXN_OPS} \
                     (its --max-txn-ops)",
                    ops.len()
                ),
            });
        }
        Ok(ops
            .into_iter()
            .map(|op| match op {
                BatchOp::Put(key, value) => TxnOp::put(key, value, None),
                BatchOp::Delete(key) => TxnOp::delete(key, None),
            })
            .collect())
    }

    /// Runs `txn`; whether its conditions held.
    fn commit(&self, operation: &'static str, txn: Txn) -> Result<bool, StoreError> {
        let mut kv = self.kv();
        self.metrics
            .flushed(|| self.run(async move { kv.txn(txn).await }))
            .map(|answer| answer.succeeded())
            .map_err(failed(operation))
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
        let mut kv = self.kv();
        let key = key.to_vec();
        let answer = self
            .run(async move { kv.get(key, None).await })
            .map_err(failed("get"))?;
        Ok(answer.kvs().first().map(|entry| entry.value().to_vec()))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let mut kv = self.kv();
        let (key, value) = (key.to_vec(), value.to_vec());
        self.metrics
            .flushed(|| self.run(async move { kv.put(key, value, None).await }))
            .map(drop)
            .map_err(failed("put"))
    }

    fn delete(&self, key: &[u8]) -> Result<(), StoreError> {
        let mut kv = self.kv();
        let key = key.to_vec();
        self.metrics
            .flushed(|| self.run(async move { kv.delete(key, None).await }))
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
            let mut kv = self.kv();
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
        let ops = Self::txn_ops(ops)?;
        self.commit("batch", Txn::new().and_then(ops)).map(drop)
    }

    fn batch_if(&self, expect: Vec<Expect>, ops: Vec<BatchOp>) -> Result<bool, StoreError> {
        let ops = Self::txn_ops(ops)?;
        let compares: Vec<Compare> = expect
            .into_iter()
            .map(|condition| match condition {
                Expect::Absent(key) => Compare::version(key, CompareOp::Equal, 0),
                Expect::Value(key, value) => Compare::value(key, CompareOp::Equal, value),
            })
            .collect();
        self.commit("batch", Txn::new().when(compares).and_then(ops))
    }

    fn watch_prefix(&self, prefix: &[u8], on_change: OnChange) -> Result<(), StoreError> {
        // From the store's revision now, so that no change made after this
        // returns is missed, however long the watch takes to be set up.
        let mut kv = self.kv();
        let key = prefix.to_vec();
        let now = self
            .run(async move {
                let options = GetOptions::new()
                    .with_prefix()
                    .with_keys_only()
                    .with_limit(1);
                kv.get(key, Some(options)).await
            })
            .map_err(failed("watch"))?
            .header()
            .map(|header| header.revision());
        let client = self.connection.client.clone();
        self.connection.runtime.spawn(watch(
            client,
            prefix.to_vec(),
            now.map(|revision| revision + 1),
            on_change,
        ));
        Ok(())
    }

    fn max_batch(&self) -> usize {
        MAX_TXN_OPS
    }

    fn metrics(&self) -> &crate::metrics::StoreMetrics {
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

/// Reports every change under `prefix` from `next_revision` on (or from
/// when the watch is made), for as long as the
/// runtime runs: a broken watch is made again from the revision after the
/// last one it reported, so nothing is missed unless etcd compacted it away.
async fn watch(
    client: Client,
    prefix: Vec<u8>,
    mut next_revision: Option<i64>,
    on_change: OnChange,
) {
    loop {
        let mut options = WatchOptions::new().with_prefix();
        if let Some(revision) = next_revision {
            options = options.with_start_revision(revision);
        }
        match client
            .watch_client()
            .watch(prefix.clone(), Some(options))
            .await
        {
            Ok(mut stream) => {
                while let Ok(Some(answer)) = stream.message().await {
                    if answer.canceled() {
                        // Compacted past where it was: start afresh.
                        tracing::warn!(reason = answer.cancel_reason(), "etcd watch cancelled");
                        next_revision = None;
                        on_change(Change::Missed);
                        break;
                    }
                    let mut last = None;
                    for entry in answer.events().iter().filter_map(|event| event.kv()) {
                        on_change(Change::Key(entry.key().to_vec()));
                        last = Some(entry.mod_revision());
                    }
                    // Past the last event reported; with none, past what a
                    // progress report says the watch has seen (not what
                    // the answer that made it says: older events may
                    // still be on their way then).
                    next_revision = match last {
                        Some(revision) => Some(revision + 1),
                        None if !answer.created() => {
                            answer.header().map(|h| h.revision() + 1).or(next_revision)
                        }
                        None => next_revision,
                    };
                }
            }
            Err(error) => tracing::debug!(%error, "etcd watch not made; trying again"),
        }
        if next_revision.is_none() {
            on_change(Change::Missed);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
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
