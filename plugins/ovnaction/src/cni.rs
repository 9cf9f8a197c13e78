//! Which CNI a cluster runs, from its key/value pairs: whether its pods
//! need the Multus networks annotation.

use wasmco_guest::{Clusters, StringTable};

use crate::gojson;

/// Cluster key/value pair: `true` when ovn4nfv (Nodus) serves every
/// interface, so that pods need no Multus annotation.
pub const NODUS_FOR_ALL_INTERFACES: &str = "CNI-Networking-Nodus-CNI-For-all-interfaces";
/// Cluster key/value pair: the multi-CNI wrapper in use (`multus` if unset).
pub const MULTI_CNI_WRAPPER: &str = "CNI-Networking-Multi-CNI-Wrapper";

/// The request's string ids of the two CNI keys, when any cluster has them.
#[derive(Debug, Clone, Copy)]
pub struct CniKeys {
    nodus: Option<u32>,
    wrapper: Option<u32>,
}

impl CniKeys {
    pub fn new(strings: &StringTable<'_>) -> Self {
        CniKeys {
            nodus: strings.find(NODUS_FOR_ALL_INTERFACES),
            wrapper: strings.find(MULTI_CNI_WRAPPER),
        }
    }

    /// Whether no cluster has a key/value pair that changes the CNI.
    pub fn all_default(&self) -> bool {
        self.nodus.is_none() && self.wrapper.is_none()
    }

    /// Whether `cluster` uses Multus, from its key/value pairs (the last
    /// value of a key wins); EMCO's defaults when it has none.
    pub fn uses_multus(
        &self,
        strings: &StringTable<'_>,
        clusters: &Clusters<'_>,
        cluster: u32,
    ) -> bool {
        let (mut nodus_for_all, mut wrapper) = ("false", "multus");
        for (key, value) in clusters.kv(cluster) {
            if Some(key) == self.nodus {
                nodus_for_all = strings.get(value);
            } else if Some(key) == self.wrapper {
                wrapper = strings.get(value);
            }
        }
        !go_parse_bool(nodus_for_all).unwrap_or(false) && go_equal_fold(wrapper, "multus")
    }
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strings.EqualFold` against a lower-case ASCII word.
pub(crate) fn go_equal_fold(text: &str, word: &str) -> bool {
    gojson::folds_to(text, word)
}
