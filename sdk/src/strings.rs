//! A request's string table: each string once, in byte order, as one
//! `data` string and a list of end offsets.

/// A request's string table.
#[derive(Debug, Clone, Copy)]
pub struct StringTable<'a> {
    data: &'a str,
    ends: &'a [u32],
}

impl<'a> StringTable<'a> {
    /// The table of a request's `strings.data` and `strings.ends`.
    pub fn new(data: &'a str, ends: &'a [u32]) -> Self {
        StringTable { data, ends }
    }

    /// String `id`; empty when the id or offsets are out of range.
    #[inline]
    pub fn get(&self, id: u32) -> &'a str {
        let id = id as usize;
        let Some(&end) = self.ends.get(id) else {
            return "";
        };
        let start = if id == 0 { 0 } else { self.ends[id - 1] };
        self.data.get(start as usize..end as usize).unwrap_or("")
    }

    /// The id of `text`, if the request carries it.
    #[inline]
    pub fn find(&self, text: &str) -> Option<u32> {
        let (mut low, mut high) = (0usize, self.ends.len());
        while low < high {
            let middle = (low + high) / 2;
            match compare(self.get(middle as u32).as_bytes(), text.as_bytes()) {
                core::cmp::Ordering::Less => low = middle + 1,
                core::cmp::Ordering::Greater => high = middle,
                core::cmp::Ordering::Equal => return Some(middle as u32),
            }
        }
        None
    }

    /// How many strings the table holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// `left.cmp(right)`, eight bytes per step. In the sandbox `[u8]::cmp` is
/// a byte-at-a-time `memcmp` whose loop checks the epoch deadline on every
/// byte; a lookup compares a dozen strings that share long prefixes.
#[inline]
fn compare(left: &[u8], right: &[u8]) -> core::cmp::Ordering {
    let (left_words, _) = left.as_chunks::<8>();
    let (right_words, _) = right.as_chunks::<8>();
    let mut same = 0;
    for (l, r) in left_words.iter().zip(right_words) {
        if l != r {
            return u64::from_be_bytes(*l).cmp(&u64::from_be_bytes(*r));
        }
        same += 8;
    }
    // A byte at a time for the last few: slice comparison would call the
    // guest libc's `memcmp`, a call (and a loop) for under 8 bytes.
    let (left, right) = (&left[same..], &right[same..]);
    for (l, r) in left.iter().zip(right) {
        if l != r {
            return l.cmp(r);
        }
    }
    left.len().cmp(&right.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_and_find_round_trip() {
        let table = StringTable::new("edgeeastwest", &[4, 8, 12]);
        assert_eq!(table.get(0), "edge");
        assert_eq!(table.get(2), "west");
        assert_eq!(table.get(3), "");
        assert_eq!(table.find("east"), Some(1));
        assert_eq!(table.find("north"), None);
    }

    #[test]
    fn compare_orders_like_byte_slices() {
        let words = [
            "",
            "a",
            "a\0",
            "a\0x",
            "ab",
            "edge-clu",
            "edge-cluster-0997",
            "edge-cluster-0998",
            "edge-cluster-09",
            "edge-cluster-0997x",
            "zone-1",
            "zone-10",
            "\u{ff}",
        ];
        for left in words {
            for right in words {
                assert_eq!(
                    compare(left.as_bytes(), right.as_bytes()),
                    left.cmp(right),
                    "{left:?} vs {right:?}"
                );
            }
        }
    }
}
