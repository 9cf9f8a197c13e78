//! Reads: a key's value, chunks and all, and a prefix's entries a page at
//! a time.

use etcd_client::GetOptions;

use super::chunks::{self, Stored};
use super::connection::EtcdStore;
use super::failure::failed;
use crate::error::StoreError;

/// Keys read per range request when scanning a prefix: bounded answers,
/// well under gRPC's 4 MiB default.
const PAGE: i64 = 512;

impl EtcdStore {
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
    pub(super) fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
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

    /// Calls `visit` with every entry under `prefix`, in key order, a page
    /// of keys per request.
    pub(super) fn scan(
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
}

/// The first key after every key that starts with `prefix` (etcd's
/// range end for a prefix); `\0` (to the end) when there is none.
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
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
