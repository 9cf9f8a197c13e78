//! An app's placement columns (`clusters` and `groups`) read and written
//! as pairs of a cluster and the anyOf group it came from.

use alloc::vec::Vec;

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
