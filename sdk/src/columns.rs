//! The tables' flat columns: a column of items with a `*-start` column
//! that cuts it into one run per row.

/// Items `starts[i]..starts[i + 1]` of `items`; empty when out of range.
#[inline]
pub(crate) fn run<'a, T>(items: &'a [T], starts: &[u32], i: u32) -> &'a [T] {
    let i = i as usize;
    match (starts.get(i), starts.get(i + 1)) {
        (Some(&start), Some(&end)) => items.get(start as usize..end as usize).unwrap_or(&[]),
        _ => &[],
    }
}
