//! Writes: each batch one etcd transaction, with values too big for one
//! request written as chunks around it.

use std::collections::HashMap;

use etcd_client::{
    Compare, CompareOp, DeleteOptions, PutOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
};

use super::chunks::{self, Head, Stored};
use super::connection::EtcdStore;
use super::failure::failed;
use super::read::prefix_end;
use crate::error::StoreError;
use crate::kv::{BatchOp, Expect};

/// etcd's default `--max-txn-ops`: a batch larger than this is refused
/// rather than split, which would lose its atomicity.
pub const MAX_TXN_OPS: usize = 128;

impl EtcdStore {
    /// `ops` with each key's last change only (etcd refuses a key twice
    /// in one transaction; a batch applied in order would leave the last),
    /// refusing more than one transaction takes.
    fn last_changes(ops: Vec<BatchOp>) -> Result<Vec<BatchOp>, StoreError> {
        let mut last = HashMap::new();
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
    pub(super) fn write(
        &self,
        operation: &'static str,
        expect: Vec<Expect>,
        ops: Vec<BatchOp>,
    ) -> Result<bool, StoreError> {
        let ops = Self::last_changes(ops)?;
        let (txn_ops, written) = self.stage(ops)?;
        let mut kv = self.kv();
        let txn = Txn::new().when(conditions(expect)).and_then(txn_ops);
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
        self.forget_chunks(&replaced_chunks(&answer));
        Ok(true)
    }

    /// The transaction's operations for `ops`, each asking for the value
    /// it replaces, with the big values written as chunks first; the ids
    /// of those chunks, to remove if the transaction does not land.
    fn stage(&self, ops: Vec<BatchOp>) -> Result<(Vec<TxnOp>, Vec<String>), StoreError> {
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
        Ok((txn_ops, written))
    }

    /// Runs `txn` as it is (the hosts' own small keys); whether its
    /// conditions held.
    pub(super) fn commit(&self, operation: &'static str, txn: Txn) -> Result<bool, StoreError> {
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
    pub(super) fn forget_chunks(&self, ids: &[String]) {
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
}

/// etcd's comparisons for `expect`, against values as they are stored.
fn conditions(expect: Vec<Expect>) -> Vec<Compare> {
    expect
        .into_iter()
        .map(|condition| match condition {
            Expect::Absent(key) => Compare::version(key, CompareOp::Equal, 0),
            Expect::Value(key, value) => {
                Compare::value(key, CompareOp::Equal, chunks::inline(&value))
            }
        })
        .collect()
}

/// The chunk ids of the big values a transaction replaced or removed.
fn replaced_chunks(answer: &TxnResponse) -> Vec<String> {
    answer
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
        .collect()
}
