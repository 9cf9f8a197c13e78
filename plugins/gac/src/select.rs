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
    placed
        .iter()
        .enumerate()
        // `named` is in table order, so sorted.
        .filter(|&(_, cluster)| named.binary_search(cluster).is_ok() != deny)
        .map(|(position, _)| position)
        .collect()
}
