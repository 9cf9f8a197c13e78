//! Helpers for wasmco controllers written in Rust.
//!
//! A request carries its strings once, in byte order, as one `data` string
//! and a list of end offsets (see `wit/controller.wit`); records refer to
//! them by index. [`StringTable`] reads that table: [`StringTable::get`] turns
//! an index into the `&str`, [`StringTable::find`] an `&str` into its index by
//! binary search, so a controller compares numbers in its hot loops.
//!
//! The crate works on plain slices so that it serves the bindings generated
//! in each controller crate.

#![no_std]

extern crate alloc;

pub mod testing;

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
            match self.get(middle as u32).cmp(text) {
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

/// A request's cluster table, read by cluster index.
#[derive(Debug, Clone, Copy)]
pub struct Clusters<'a> {
    /// Column `provider`.
    pub provider: &'a [u32],
    /// Column `name`.
    pub name: &'a [u32],
    /// Column `label-start` (one more item than clusters).
    pub label_start: &'a [u32],
    /// Column `labels`.
    pub labels: &'a [u32],
    /// Column `kv-start` (one more item than clusters).
    pub kv_start: &'a [u32],
    /// Column `kv-key`.
    pub kv_key: &'a [u32],
    /// Column `kv-value`.
    pub kv_value: &'a [u32],
}

/// A [`Clusters`] view of a generated `ClusterTable`: `clusters!(request.clusters)`.
#[macro_export]
macro_rules! clusters {
    ($table:expr) => {
        $crate::Clusters {
            provider: &$table.provider,
            name: &$table.name,
            label_start: &$table.label_start,
            labels: &$table.labels,
            kv_start: &$table.kv_start,
            kv_key: &$table.kv_key,
            kv_value: &$table.kv_value,
        }
    };
}

impl<'a> Clusters<'a> {
    /// How many clusters there are.
    pub fn len(&self) -> usize {
        self.provider.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.provider.is_empty()
    }

    /// Cluster `i`'s provider (a string id); `u32::MAX` when out of range.
    #[inline]
    pub fn provider(&self, i: u32) -> u32 {
        self.provider.get(i as usize).copied().unwrap_or(u32::MAX)
    }

    /// Cluster `i`'s name (a string id); `u32::MAX` when out of range.
    #[inline]
    pub fn name(&self, i: u32) -> u32 {
        self.name.get(i as usize).copied().unwrap_or(u32::MAX)
    }

    /// Cluster `i`'s labels (string ids).
    #[inline]
    pub fn labels(&self, i: u32) -> &'a [u32] {
        run(self.labels, self.label_start, i)
    }

    /// Cluster `i`'s key/value pairs (string ids).
    #[inline]
    pub fn kv(&self, i: u32) -> impl Iterator<Item = (u32, u32)> + 'a {
        let keys = run(self.kv_key, self.kv_start, i);
        let values = run(self.kv_value, self.kv_start, i);
        keys.iter().copied().zip(values.iter().copied())
    }
}

/// Items `starts[i]..starts[i + 1]` of `items`; empty when out of range.
#[inline]
fn run<'a>(items: &'a [u32], starts: &[u32], i: u32) -> &'a [u32] {
    let i = i as usize;
    match (starts.get(i), starts.get(i + 1)) {
        (Some(&start), Some(&end)) => items.get(start as usize..end as usize).unwrap_or(&[]),
        _ => &[],
    }
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
        let clusters = Clusters {
            provider: &[0, 0],
            name: &[1, 2],
            label_start: &[0, 2, 3],
            labels: &[5, 6, 7],
            kv_start: &[0, 0, 1],
            kv_key: &[8],
            kv_value: &[9],
        };
        assert_eq!(clusters.labels(0), &[5, 6]);
        assert_eq!(clusters.labels(1), &[7]);
        assert!(clusters.labels(2).is_empty());
        assert_eq!(clusters.kv(1).collect::<alloc::vec::Vec<_>>(), [(8, 9)]);
    }
}
