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
    Client, Compare, CompareOp, DeleteOptions, GetOptions, KvClient, MaintenanceClient, PutOptions,
    Txn, TxnOp, TxnOpResponse, WatchOptions,
};

use crate::{BatchOp, Change, Expect, KvStore, OnChange, StoreError};

mod chunks;
mod hosts;

use chunks::{Head, Stored};

pub use hosts::EtcdHosts;

/// Keys read per range request when scanning a prefix: bounded answers,
/// well under gRPC's 4 MiB default.
const PAGE: i64 = 512;

/// etcd's default `--max-txn-ops`: a batch larger than this is refused
/// rather than split, which would lose its atomicity.
pub const MAX_TXN_OPS: usize = 128;

/// The largest answer etcd is asked for: a scan's page of values.
const MAX_ANSWER_BYTES: usize = 1 << 30;

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
        self.connection
            .client
            .kv_client()
            .max_decoding_message_size(MAX_ANSWER_BYTES)
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

    /// `ops` with each key's last change only (etcd refuses a key twice
    /// in one transaction; a batch applied in order would leave the last),
    /// refusing more than one transaction takes.
    fn last_changes(ops: Vec<BatchOp>) -> Result<Vec<BatchOp>, StoreError> {
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
        Ok(ops)
    }

    /// Applies `ops` if every one of `expect` holds: big values into
    /// chunks first, then one transaction; the chunks of the values it
    /// replaced (each change asks etcd for the value it replaces) are
    /// removed after.
    fn write(
        &self,
        operation: &'static str,
        expect: Vec<Expect>,
        ops: Vec<BatchOp>,
    ) -> Result<bool, StoreError> {
        let ops = Self::last_changes(ops)?;
        let sizes: Vec<usize> = ops
            .iter()
            .map(|op| match op {
                BatchOp::Put(_, value) => value.len(),
                BatchOp::Delete(_) => 0,
            })
            .collect();
        let chunked = chunks::to_chunk(&sizes);
        let mut written = Vec::new();
        let mut txn_ops = Vec::with_capacity(ops.len());
        let replacing = Some(PutOptions::new().with_prev_key());
        for (op, chunk) in ops.into_iter().zip(chunked) {
            let txn_op = match op {
                BatchOp::Put(key, value) if chunk => {
                    let head = match self.put_chunks(&value) {
                        Ok(head) => head,
                        Err(error) => {
                            self.forget_chunks(&written);
                            return Err(error);
                        }
                    };
                    let op = TxnOp::put(key, chunks::head(&head), replacing.clone());
                    written.push(head.id);
                    op
                }
                BatchOp::Put(key, value) => {
                    TxnOp::put(key, chunks::inline(&value), replacing.clone())
                }
                BatchOp::Delete(key) => {
                    TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()))
                }
            };
            txn_ops.push(txn_op);
        }
        let compares: Vec<Compare> = expect
            .into_iter()
            .map(|condition| match condition {
                Expect::Absent(key) => Compare::version(key, CompareOp::Equal, 0),
                Expect::Value(key, value) => {
                    Compare::value(key, CompareOp::Equal, chunks::inline(&value))
                }
            })
            .collect();
        let mut kv = self.kv();
        let txn = Txn::new().when(compares).and_then(txn_ops);
        let answer = self
            .metrics
            .flushed(|| self.run(async move { kv.txn(txn).await }))
            .map_err(failed(operation));
        let answer = match answer {
            Ok(answer) if answer.succeeded() => answer,
            Ok(_) => {
                self.forget_chunks(&written);
                return Ok(false);
            }
            // Whether it landed is unknown: its chunks stay.
            Err(error) => return Err(error),
        };
        let replaced: Vec<String> = answer
            .op_responses()
            .into_iter()
            .flat_map(|response| match response {
                TxnOpResponse::Put(put) => put
                    .prev_key()
                    .map(|kv| kv.value().to_vec())
                    .into_iter()
                    .collect(),
                TxnOpResponse::Delete(delete) => delete
                    .prev_kvs()
                    .iter()
                    .map(|kv| kv.value().to_vec())
                    .collect(),
                _ => Vec::new(),
            })
            .filter_map(|previous| match chunks::decode(&previous) {
                Ok(Stored::Chunked(head)) => Some(head.id),
                _ => None,
            })
            .collect();
        self.forget_chunks(&replaced);
        Ok(true)
    }

    /// Runs `txn` as it is (the hosts' own small keys); whether its
    /// conditions held.
    fn commit(&self, operation: &'static str, txn: Txn) -> Result<bool, StoreError> {
        let mut kv = self.kv();
        self.metrics
            .flushed(|| self.run(async move { kv.txn(txn).await }))
            .map(|answer| answer.succeeded())
            .map_err(failed(operation))
    }

    /// Writes `value` as chunks under a new id; their head.
    fn put_chunks(&self, value: &[u8]) -> Result<Head, StoreError> {
        let id = chunks::new_id();
        let pieces: Vec<&[u8]> = value.chunks(chunks::CHUNK_BYTES).collect();
        for (index, piece) in pieces.iter().enumerate() {
            let mut kv = self.kv();
            let (key, piece) = (chunks::chunk_key(&id, index), piece.to_vec());
            let written = self
                .metrics
                .flushed(|| self.run(async move { kv.put(key, piece, None).await }))
                .map_err(failed("put"));
            if let Err(error) = written {
                self.forget_chunks(std::slice::from_ref(&id));
                return Err(error);
            }
        }
        Ok(Head {
            id,
            count: pieces.len(),
            len: value.len(),
        })
    }

    /// Removes the chunks of `ids`; what fails to go only takes room.
    fn forget_chunks(&self, ids: &[String]) {
        for id in ids {
            let mut kv = self.kv();
            let prefix = chunks::chunks_prefix(id);
            let end = prefix_end(&prefix);
            let removed = self.run(async move {
                kv.delete(prefix, Some(DeleteOptions::new().with_range(end)))
                    .await
            });
            if let Err(error) = removed {
                tracing::warn!(chunks = %id, %error, "could not remove a big value's old chunks");
            }
        }
    }

    /// The value `raw` stands for: itself, or its chunks put together;
    /// `None` when the chunks are gone (the key was written again since).
    fn value_of(&self, raw: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let head = match chunks::decode(raw) {
            Ok(Stored::Inline(value)) => return Ok(Some(value.to_vec())),
            Ok(Stored::Chunked(head)) => head,
            Err(reason) => {
                return Err(StoreError::Io {
                    operation: "get",
                    reason,
                });
            }
        };
        let mut value = Vec::with_capacity(head.len);
        for index in 0..head.count {
            let mut kv = self.kv();
            let key = chunks::chunk_key(&head.id, index);
            let answer = self
                .run(async move { kv.get(key, None).await })
                .map_err(failed("get"))?;
            match answer.kvs().first() {
                Some(piece) => value.extend_from_slice(piece.value()),
                None => return Ok(None),
            }
        }
        if value.len() != head.len {
            return Ok(None);
        }
        Ok(Some(value))
    }

    /// The value at `key`, chunks and all: read again when its chunks were
    /// replaced under the read.
    fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        for _ in 0..5 {
            let mut kv = self.kv();
            let asked = key.to_vec();
            let answer = self
                .run(async move { kv.get(asked, None).await })
                .map_err(failed("get"))?;
            let Some(entry) = answer.kvs().first() else {
                return Ok(None);
            };
            if let Some(value) = self.value_of(entry.value())? {
                return Ok(Some(value));
            }
        }
        Err(StoreError::Unavailable {
            operation: "get",
            reason: "the value kept changing while it was read".into(),
        })
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
                match chunks::decode(entry.value()) {
                    Ok(Stored::Inline(value)) => visit(entry.key(), value),
                    // Rare and big: read whole, as a get would.
                    _ => {
                        if let Some(value) = self.read(entry.key())? {
                            visit(entry.key(), &value);
                        }
                    }
                }
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
        self.write("batch", Vec::new(), ops).map(drop)
    }

    fn batch_if(&self, expect: Vec<Expect>, ops: Vec<BatchOp>) -> Result<bool, StoreError> {
        self.write("batch", expect, ops)
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
