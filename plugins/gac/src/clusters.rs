//! The app's clusters as edits address them and messages name them.

use wasmco_guest::{Clusters, StringTable};

use crate::ClusterScope;

/// `all` when the edit covers every cluster of the app, else the clusters
/// at `positions`.
pub fn scope(everywhere: bool, positions: &[usize], placed: &[u32]) -> ClusterScope {
    if everywhere {
        ClusterScope::All
    } else {
        ClusterScope::Only(positions.iter().map(|&p| placed[p]).collect())
    }
}

/// `provider+cluster`, as EMCO names a cluster.
pub fn describe(strings: &StringTable<'_>, clusters: &Clusters<'_>, cluster: u32) -> String {
    format!(
        "{}+{}",
        strings.get(clusters.provider(cluster)),
        strings.get(clusters.name(cluster))
    )
}

/// The clusters' names, the first five and how many more there are.
pub fn list(
    strings: &StringTable<'_>,
    clusters: &Clusters<'_>,
    cluster_list: impl Iterator<Item = u32>,
) -> String {
    let mut names: Vec<String> = cluster_list
        .map(|cluster| describe(strings, clusters, cluster))
        .collect();
    if names.len() > 5 {
        let more = names.len() - 5;
        names.truncate(5);
        names.push(format!("and {more} more"));
    }
    names.join(", ")
}
