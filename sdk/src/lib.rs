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

use alloc::vec::Vec;

#[cfg(feature = "intents")]
pub mod intents;
#[cfg(feature = "serde")]
pub mod pods;
pub mod quantity;
pub mod records;
pub mod testing;

/// A request's node table (`nodes`), read by cluster and node index:
/// `nodes!(request.nodes)`. Empty unless the controller's declaration asks
/// for nodes (`"needs": ["nodes"]`).
#[derive(Debug, Clone, Copy)]
pub struct Nodes<'a> {
    /// Column `node-start` (one more item than clusters).
    pub node_start: &'a [u32],
    /// Column `name`.
    pub name: &'a [u32],
    /// Column `label-start` (one more item than nodes).
    pub label_start: &'a [u32],
    /// Column `label-key`.
    pub label_key: &'a [u32],
    /// Column `label-value`.
    pub label_value: &'a [u32],
    /// Column `resource-start` (one more item than nodes).
    pub resource_start: &'a [u32],
    /// Column `resource`.
    pub resource: &'a [u32],
    /// Column `amount`.
    pub amount: &'a [i64],
}

/// A [`Nodes`] view of a generated `NodeTable`: `nodes!(request.nodes)`.
#[macro_export]
macro_rules! nodes {
    ($table:expr) => {
        $crate::Nodes {
            node_start: &$table.node_start,
            name: &$table.name,
            label_start: &$table.label_start,
            label_key: &$table.label_key,
            label_value: &$table.label_value,
            resource_start: &$table.resource_start,
            resource: &$table.resource,
            amount: &$table.amount,
        }
    };
}

impl<'a> Nodes<'a> {
    /// The nodes of cluster `cluster` (node indices); none when the table
    /// has no entry for it.
    pub fn of(&self, cluster: u32) -> core::ops::Range<u32> {
        let cluster = cluster as usize;
        match (
            self.node_start.get(cluster),
            self.node_start.get(cluster + 1),
        ) {
            (Some(&start), Some(&end)) if start <= end => start..end,
            _ => 0..0,
        }
    }

    /// Node `node`'s name (a string id); `u32::MAX` when out of range.
    pub fn name(&self, node: u32) -> u32 {
        self.name.get(node as usize).copied().unwrap_or(u32::MAX)
    }

    /// Node `node`'s labels, as (key, value) string ids.
    pub fn labels(&self, node: u32) -> impl Iterator<Item = (u32, u32)> + 'a {
        let keys = run(self.label_key, self.label_start, node);
        let values = run(self.label_value, self.label_start, node);
        keys.iter().copied().zip(values.iter().copied())
    }

    /// The value of node `node`'s label `key`, if it carries one.
    pub fn label(&self, node: u32, key: u32) -> Option<u32> {
        self.labels(node).find(|&(k, _)| k == key).map(|(_, v)| v)
    }

    /// How much of `resource` (a string id) node `node` has free; 0 for a
    /// resource it does not list.
    pub fn amount(&self, node: u32, resource: u32) -> i64 {
        let resources = run(self.resource, self.resource_start, node);
        let amounts = run(self.amount, self.resource_start, node);
        resources
            .iter()
            .position(|&r| r == resource)
            .and_then(|i| amounts.get(i).copied())
            .unwrap_or(0)
    }
}

/// In a placement's `groups`, a cluster that came from allOf.
pub const NO_GROUP: u32 = u32::MAX;

/// An app's placement (its `clusters` and `groups` columns) as pairs of a
/// cluster index and the anyOf group (a string id) it came from, `None` for
/// allOf: `placed(&p.clusters, &p.groups)`.
pub fn placed<'a>(
    clusters: &'a [u32],
    groups: &'a [u32],
) -> impl Iterator<Item = (u32, Option<u32>)> + 'a {
    clusters
        .iter()
        .enumerate()
        .map(move |(position, &cluster)| {
            let group = groups.get(position).copied().filter(|&g| g != NO_GROUP);
            (cluster, group)
        })
}

/// The `groups` column for `groups` (one per cluster, `None` for allOf):
/// empty when every cluster came from allOf.
pub fn group_column(groups: impl IntoIterator<Item = Option<u32>>) -> Vec<u32> {
    let column: Vec<u32> = groups.into_iter().map(|g| g.unwrap_or(NO_GROUP)).collect();
    if column.iter().all(|&g| g == NO_GROUP) {
        Vec::new()
    } else {
        column
    }
}

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
    left[same..].cmp(&right[same..])
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

// Why the scans below look the way they do: in the sandbox, every loop
// checks the epoch deadline on its back-edge, and the check's out-of-line
// call makes Cranelift keep the loop's values on the stack (wasmtime#7244),
// so each trip of a loop costs several reloads. The scans therefore compare
// 64 items per trip, four at a time on the vector unit, into a bit mask, and
// handle the (few) hits outside that loop. Natively the same code runs on
// SSE2; the two builds do the same work.
impl Clusters<'_> {
    /// The clusters of `provider` that carry `label`, in table order.
    ///
    /// Scans the flat `labels` column, then finds each hit's cluster by
    /// galloping along `label-start` from the previous hit's cluster.
    #[inline(never)]
    pub fn labelled(&self, provider: u32, label: u32) -> Vec<u32> {
        let mut matched = Vec::new();
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
/// the next one). Gallops from `from`, so hits a few clusters apart cost a
/// few steps. Returns a cluster past the table (which has no provider) when
/// `starts` does not cover `position`.
#[inline(always)]
fn owner(starts: &[u32], from: usize, position: usize) -> usize {
    let ahead = starts.get(from..).unwrap_or(&[]);
    if ahead.first().is_none_or(|&start| start as usize > position) {
        return usize::MAX;
    }
    let mut bound = 1;
    while ahead
        .get(bound)
        .is_some_and(|&start| start as usize <= position)
    {
        bound *= 2;
    }
    let window = &ahead[..bound.min(ahead.len())];
    from + window.partition_point(|&start| start as usize <= position) - 1
}

/// Items compared per trip of a scan: the bits of a `u64`.
const MASK_BITS: usize = 64;

/// Bit `i` set where `chunk[i] == wanted` (`chunk` holds at most 64 items).
#[inline(always)]
fn equal_mask(chunk: &[u32], wanted: u32) -> u64 {
    match <&[u32; MASK_BITS]>::try_from(chunk) {
        Ok(full) => full
            .as_chunks::<4>()
            .0
            .iter()
            .enumerate()
            .fold(0, |mask, (index, quad)| {
                mask | (u64::from(lanes::equal(quad, wanted)) << (index * 4))
            }),
        Err(_) => chunk.iter().enumerate().fold(0, |mask, (bit, &item)| {
            mask | (u64::from(item == wanted) << bit)
        }),
    }
}

/// Four comparisons at once, on the vector unit where there is one.
mod lanes {
    /// Bit `i` set where `quad[i] == wanted`.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn equal(quad: &[u32; 4], wanted: u32) -> u8 {
        use core::arch::wasm32::{i32x4_bitmask, u32x4_eq, u32x4_splat, v128, v128_load};
        // SAFETY: `quad` is 16 readable bytes; v128.load needs no alignment.
        let items = unsafe { v128_load(quad.as_ptr().cast::<v128>()) };
        i32x4_bitmask(u32x4_eq(items, u32x4_splat(wanted)))
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn equal(quad: &[u32; 4], wanted: u32) -> u8 {
        use core::arch::x86_64::{
            __m128i, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps,
            _mm_set1_epi32,
        };
        // SAFETY: `quad` is 16 readable bytes and loadu needs no alignment;
        // SSE2 is part of every x86_64 target.
        unsafe {
            let items = _mm_loadu_si128(quad.as_ptr().cast::<__m128i>());
            let equal = _mm_cmpeq_epi32(items, _mm_set1_epi32(wanted as i32));
            _mm_movemask_ps(_mm_castsi128_ps(equal)) as u8
        }
    }

    #[cfg(not(any(
        all(target_arch = "wasm32", target_feature = "simd128"),
        target_arch = "x86_64"
    )))]
    #[inline(always)]
    pub fn equal(quad: &[u32; 4], wanted: u32) -> u8 {
        equal_scalar(quad, wanted)
    }

    /// What [`equal`] computes, one item at a time.
    #[cfg_attr(
        any(
            all(target_arch = "wasm32", target_feature = "simd128"),
            target_arch = "x86_64"
        ),
        allow(dead_code, reason = "the vector versions are tested against it")
    )]
    pub fn equal_scalar(quad: &[u32; 4], wanted: u32) -> u8 {
        quad.iter().enumerate().fold(0, |mask, (bit, &item)| {
            mask | (u8::from(item == wanted) << bit)
        })
    }
}

/// `base + i` for every bit `i` set in `mask`, lowest first.
#[inline(always)]
fn set_bits(mut mask: u64, base: usize) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            base + bit
        })
    })
}

/// Items `starts[i]..starts[i + 1]` of `items`; empty when out of range.
#[inline]
fn run<'a, T>(items: &'a [T], starts: &[u32], i: u32) -> &'a [T] {
    let i = i as usize;
    match (starts.get(i), starts.get(i + 1)) {
        (Some(&start), Some(&end)) => items.get(start as usize..end as usize).unwrap_or(&[]),
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

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

    #[test]
    fn vector_compare_matches_the_scalar_one() {
        let quads = [
            [1, 2, 3, 4],
            [7, 7, 7, 7],
            [0, 7, 0, 7],
            [u32::MAX, 7, 7, 0],
        ];
        for quad in quads {
            for wanted in [0, 7, u32::MAX] {
                assert_eq!(
                    lanes::equal(&quad, wanted),
                    lanes::equal_scalar(&quad, wanted),
                    "{quad:?} == {wanted}"
                );
            }
        }
    }
}
