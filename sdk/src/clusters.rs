//! A request's cluster table, read by cluster index, and the scans that
//! find clusters by label or name.

use alloc::vec::Vec;

use crate::columns::run;
use crate::scan::{MASK_BITS, above_mask, equal_mask, set_bits};

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

// The scans compare 64 items per loop trip; `crate::scan` says why.
impl Clusters<'_> {
    /// The clusters of `provider` that carry `label`, in table order.
    ///
    /// Scans the flat `labels` column, then finds each hit's cluster by
    /// looking ahead along `label-start` from the previous hit's cluster.
    #[inline(never)]
    pub fn labelled(&self, provider: u32, label: u32) -> Vec<u32> {
        // Room for a typical label's hits: growing from empty costs a few
        // allocator calls per scan, each a function entry in the sandbox.
        let mut matched = Vec::with_capacity(64);
        let mut cluster = 0usize;
        for (chunk_index, chunk) in self.labels.chunks(MASK_BITS).enumerate() {
            for position in set_bits(equal_mask(chunk, label), chunk_index * MASK_BITS) {
                cluster = owner(self.label_start, cluster, position);
                let index = cluster as u32;
                if self.provider.get(cluster) == Some(&provider) && matched.last() != Some(&index) {
                    matched.push(index);
                }
            }
        }
        matched
    }

    /// The clusters of `provider` called `name`, in table order.
    #[inline(never)]
    pub fn named(&self, provider: u32, name: u32) -> Vec<u32> {
        let mut matched = Vec::new();
        let chunks = self
            .name
            .chunks(MASK_BITS)
            .zip(self.provider.chunks(MASK_BITS));
        for (chunk_index, (names, providers)) in chunks.enumerate() {
            let mask = equal_mask(names, name);
            if mask != 0 {
                let mask = mask & equal_mask(providers, provider);
                matched.extend(set_bits(mask, chunk_index * MASK_BITS).map(|i| i as u32));
            }
        }
        matched
    }
}

/// The cluster owning label `position`: the last `i >= from` with
/// `starts[i] <= position` (clusters without labels share their start with
/// the next one). Hits come in order, a few clusters apart, so it looks
/// ahead of `from` 16 starts at a time for the first one past `position`:
/// no chain of dependent loads, as a binary search would be. Returns a
/// cluster past the table (which has no provider) when `starts` does not
/// cover `position`.
#[inline(always)]
fn owner(starts: &[u32], from: usize, position: usize) -> usize {
    let Ok(position) = u32::try_from(position) else {
        return usize::MAX;
    };
    if starts.get(from).is_none_or(|&start| start > position) {
        return usize::MAX;
    }
    let mut at = from + 1;
    while let Some(ahead) = starts.get(at..).filter(|ahead| !ahead.is_empty()) {
        let mask = above_mask(ahead, position);
        if mask != 0 {
            return at + mask.trailing_zeros() as usize - 1;
        }
        at += ahead.len().min(16);
    }
    starts.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn labels_and_pairs_are_read_by_cluster() {
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

    /// A table of `count` clusters of two providers (0 and 1) with 0 to 6
    /// labels each from ids 10..30, repeats included, from a fixed seed.
    fn table(count: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
        let mut seed = 0x2545_f491_u32;
        let mut next = move |below: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed % below
        };
        let (mut provider, mut name, mut starts, mut labels) = (vec![], vec![], vec![0], vec![]);
        for i in 0..count {
            provider.push(next(2));
            name.push(1000 + i % 97);
            for _ in 0..next(7) {
                labels.push(10 + next(20));
            }
            starts.push(labels.len() as u32);
        }
        (provider, name, starts, labels)
    }

    #[test]
    fn scans_agree_with_a_cluster_by_cluster_check() {
        for count in [0, 1, 5, 63, 64, 65, 300] {
            let (provider, name, label_start, labels) = table(count);
            let clusters = Clusters {
                provider: &provider,
                name: &name,
                label_start: &label_start,
                labels: &labels,
                kv_start: &[],
                kv_key: &[],
                kv_value: &[],
            };
            for wanted_provider in [0, 1, 7] {
                for label in 9..31 {
                    let expected: Vec<u32> = (0..count)
                        .filter(|&i| {
                            provider[i as usize] == wanted_provider
                                && clusters.labels(i).contains(&label)
                        })
                        .collect();
                    assert_eq!(
                        clusters.labelled(wanted_provider, label),
                        expected,
                        "{count} clusters, provider {wanted_provider}, label {label}"
                    );
                }
                for wanted_name in [999, 1000, 1050, 1096] {
                    let expected: Vec<u32> = (0..count)
                        .filter(|&i| {
                            provider[i as usize] == wanted_provider
                                && name[i as usize] == wanted_name
                        })
                        .collect();
                    assert_eq!(clusters.named(wanted_provider, wanted_name), expected);
                }
            }
        }
    }

    #[test]
    fn a_table_whose_starts_do_not_cover_the_labels_matches_nothing_past_them() {
        let clusters = Clusters {
            provider: &[0, 0],
            name: &[1, 2],
            label_start: &[0, 1, 2],
            labels: &[5, 6, 5, 5],
            kv_start: &[],
            kv_key: &[],
            kv_value: &[],
        };
        assert_eq!(clusters.labelled(0, 5), [0]);
        assert_eq!(clusters.labelled(0, 6), [1]);
    }
}
