//! Which of an app's clusters a customization applies to.

use wasmco_guest::{Clusters, StringTable};

use crate::spec::CustomizationSpec;

/// The positions (indices into `placed`) of the clusters `customization`
/// selects among `placed`, the app's clusters.
///
/// `clusterSpecific: "false"` selects them all. Otherwise `clusterInfo`
/// names clusters of its provider, by `scope`: `name` (the cluster called
/// `cluster`) or `label` (the clusters labelled `clusterLabel`); `mode:
/// allow` selects those, `deny` every other cluster of the app. Another
/// scope selects them all, as in EMCO.
pub fn select(
    customization: &CustomizationSpec,
    placed: &[u32],
    strings: &StringTable<'_>,
    clusters: &Clusters<'_>,
) -> Vec<usize> {
    let everything = || (0..placed.len()).collect();
    if !customization.cluster_specific {
        return everything();
    }
    let info = &customization.cluster_info;
    // A provider, name or label the request does not carry is on no cluster.
    let provider = strings.find(&info.cluster_provider);
    let named: Vec<u32> = match info.scope.to_ascii_lowercase().as_str() {
        "name" => match (provider, strings.find(&info.cluster)) {
            (Some(provider), Some(name)) => clusters.named(provider, name),
            _ => Vec::new(),
        },
        "label" => match (provider, strings.find(&info.cluster_label)) {
            (Some(provider), Some(label)) => clusters.labelled(provider, label),
            _ => Vec::new(),
        },
        _ => return everything(),
    };
    let deny = info.mode.eq_ignore_ascii_case("deny");
    // A bit per cluster of the table: testing each placed cluster is then
    // one load, where a search of `named` was several.
    let mut is_named = vec![0u64; clusters.len().div_ceil(64)];
    for &cluster in &named {
        if let Some(word) = is_named.get_mut(cluster as usize / 64) {
            *word |= 1 << (cluster % 64);
        }
    }
    let selected = |cluster: u32| {
        is_named
            .get(cluster as usize / 64)
            .is_some_and(|word| word & (1 << (cluster % 64)) != 0)
    };
    placed
        .iter()
        .enumerate()
        .filter(|&(_, &cluster)| selected(cluster) != deny)
        .map(|(position, _)| position)
        .collect()
}
