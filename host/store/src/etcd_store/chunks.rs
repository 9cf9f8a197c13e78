//! Values larger than etcd takes in one request (its `--max-request-bytes`,
//! 1.5 MiB unless raised), so that any value the API accepts works on
//! etcd as on sled: a big chart, a Python controller.
//!
//! A big value is written as chunks under a fresh id first, where no
//! reader looks, and its key then gets a small head naming them, in the
//! transaction that would have held the value. Every write of a key asks
//! etcd for the value it replaces, so the chunks a write leaves
//! unreachable are known and removed.
//!
//! Key layout (outside every text key space, so no scan of one finds them):
//!
//! ```text
//! \0chunks/<id>/<index>   one chunk of a big value
//! ```
//!
//! Stored values: a head is `MARK chunked` and JSON; a value that happens
//! to start with `MARK` is stored behind `MARK escaped`, so that no value
//! a user writes can pass for a head.

use serde::{Deserialize, Serialize};

/// Bytes of one chunk: one request each, well within etcd's limit.
pub(super) const CHUNK_BYTES: usize = 1 << 20;
/// Values above this are chunked.
pub(super) const INLINE_BYTES: usize = 256 << 10;
/// Inline bytes in one transaction; past this its largest values are
/// chunked too.
pub(super) const BATCH_BYTES: usize = 1 << 20;

const MARK: &[u8] = b"\xffwasmco-";
const CHUNKED: &[u8] = b"\xffwasmco-chunked\0";
const ESCAPED: &[u8] = b"\xffwasmco-escaped\0";
const CHUNKS: &[u8] = b"\0chunks/";

/// What a big value's key holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Head {
    /// Its chunks' id.
    pub(super) id: String,
    /// How many chunks.
    pub(super) count: usize,
    /// The value's length.
    pub(super) len: usize,
}

/// A stored value, read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Stored<'a> {
    /// The value itself.
    Inline(&'a [u8]),
    /// A big value: where its chunks are.
    Chunked(Head),
}

/// What `raw` (as stored) is.
pub(super) fn decode(raw: &[u8]) -> Result<Stored<'_>, String> {
    if let Some(head) = raw.strip_prefix(CHUNKED) {
        return serde_json::from_slice(head)
            .map(Stored::Chunked)
            .map_err(|e| format!("a chunked value's head is unreadable: {e}"));
    }
    Ok(Stored::Inline(raw.strip_prefix(ESCAPED).unwrap_or(raw)))
}

/// `value` as stored inline.
pub(super) fn inline(value: &[u8]) -> Vec<u8> {
    if value.starts_with(MARK) {
        [ESCAPED, value].concat()
    } else {
        value.to_vec()
    }
}

/// The head stored at a big value's key.
pub(super) fn head(head: &Head) -> Vec<u8> {
    [CHUNKED, &serde_json::to_vec(head).unwrap_or_default()].concat()
}

/// A new chunk id.
pub(super) fn new_id() -> String {
    format!("{:032x}", fastrand::u128(..))
}

/// The prefix of the chunks of `id`.
pub(super) fn chunks_prefix(id: &str) -> Vec<u8> {
    [CHUNKS, id.as_bytes(), b"/"].concat()
}

/// The key of chunk `index` of `id`.
pub(super) fn chunk_key(id: &str, index: usize) -> Vec<u8> {
    [chunks_prefix(id), format!("{index:08}").into_bytes()].concat()
}

/// Which of `sizes` (by position) go into chunks: every one above
/// [`INLINE_BYTES`], then the largest until the rest fit [`BATCH_BYTES`].
pub(super) fn to_chunk(sizes: &[usize]) -> Vec<bool> {
    let mut chunked: Vec<bool> = sizes.iter().map(|&s| s > INLINE_BYTES).collect();
    let mut inline: usize = sizes
        .iter()
        .zip(&chunked)
        .filter(|(_, c)| !**c)
        .map(|(s, _)| s)
        .sum();
    let mut by_size: Vec<usize> = (0..sizes.len()).filter(|&i| !chunked[i]).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    for i in by_size {
        if inline <= BATCH_BYTES {
            break;
        }
        chunked[i] = true;
        inline -= sizes[i];
    }
    chunked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_value_passes_for_a_head() {
        let forged = head(&Head {
            id: "someone-elses".into(),
            count: 1,
            len: 3,
        });
        // Written by a user, a head's bytes are read back as they were.
        assert_eq!(
            decode(&inline(&forged)).unwrap(),
            Stored::Inline(&forged[..])
        );
        assert_eq!(decode(&inline(b"plain")).unwrap(), Stored::Inline(b"plain"));
        let real = Head {
            id: new_id(),
            count: 2,
            len: 5,
        };
        assert_eq!(decode(&head(&real)).unwrap(), Stored::Chunked(real));
    }

    #[test]
    fn big_values_and_crowded_batches_are_chunked() {
        assert_eq!(to_chunk(&[10, INLINE_BYTES + 1]), [false, true]);
        let crowded = vec![INLINE_BYTES; 8];
        let chunked = to_chunk(&crowded);
        let inline: usize = chunked.iter().filter(|c| !**c).count() * INLINE_BYTES;
        assert!(inline <= BATCH_BYTES, "{chunked:?}");
        assert!(chunked.iter().any(|c| !c), "the rest stays inline");
    }
}
