//! Capacity placement (EMCO's hpa placement idea): keeps only the clusters
//! that declare enough capacity for what an app asks.
//!
//! Clusters declare capacity in their key/value pairs: `cpu` (cores, as a
//! Kubernetes quantity such as `16` or `3500m`), `memory` (bytes, as a quantity
//! such as `64Gi`) and any device by its resource name (`nvidia.com/gpu: 2`).
//! The intent asks per app:
//!
//! ```json
//! {"apps": [{"app": "web", "cpu": "2", "memory": "4Gi", "devices": {"nvidia.com/gpu": 1}}]}
//! ```
//!
//! Clusters of the app's current placement that fall short are unplaced. An
//! app left with no cluster, or an anyOf group left empty, is an error.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "placement-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

pub use bindings::exports::wasmco::controller::placement::{
    PlacementEdit, PlacementRequest, UnplaceApp,
};
pub use bindings::wasmco::controller::types::{
    AppPlacement, ClusterTable, ControllerError, Strings,
};
use wasmco_guest::{Clusters, StringTable};

use wasmco_guest::quantity::Quantity;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapacityIntent {
    apps: Vec<AppRequirements>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppRequirements {
    app: String,
    #[serde(default)]
    cpu: Option<Quantity>,
    #[serde(default)]
    memory: Option<Quantity>,
    #[serde(default)]
    devices: BTreeMap<String, Quantity>,
}

impl AppRequirements {
    /// Every (kv key, amount) the app asks for.
    fn wanted(&self) -> impl Iterator<Item = (&str, &Quantity)> {
        self.cpu
            .iter()
            .map(|q| ("cpu", q))
            .chain(self.memory.iter().map(|q| ("memory", q)))
            .chain(self.devices.iter().map(|(k, q)| (k.as_str(), q)))
    }

    /// The first resource cluster `cluster` lacks, if any.
    fn shortfall(
        &self,
        clusters: Clusters<'_>,
        strings: StringTable<'_>,
        cluster: u32,
    ) -> Option<String> {
        self.wanted().find_map(|(key, wanted)| {
            let key_id = strings.find(key);
            let offered = clusters
                .kv(cluster)
                .find(|(k, _)| Some(*k) == key_id)
                .and_then(|(_, v)| strings.get(v).parse::<Quantity>().ok());
            match offered {
                Some(offered) if offered >= *wanted => None,
                Some(offered) => Some(format!("{key} {offered} < {wanted}")),
                None => Some(format!("no {key} declared")),
            }
        })
    }
}

/// Unplaces every current cluster that lacks the capacity its app asks for.
pub fn place(request: &PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
    let intent: CapacityIntent = serde_json::from_str(&request.intent)
        .map_err(|e| error(format!("capacity intent is not valid: {e}")))?;
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let mut edits = Vec::new();
    for wanted in &intent.apps {
        let placement = request
            .current
            .iter()
            .find(|p| strings.get(p.app) == wanted.app)
            .ok_or_else(|| {
                error(format!(
                    "app {:?} has no placement to filter; run generic placement first",
                    wanted.app
                ))
            })?;
        if let Some(edit) = filter_app(request, strings, placement, wanted)? {
            edits.push(edit);
        }
    }
    Ok(edits)
}

fn filter_app(
    request: &PlacementRequest,
    strings: StringTable<'_>,
    placement: &AppPlacement,
    wanted: &AppRequirements,
) -> Result<Option<PlacementEdit>, ControllerError> {
    let mut dropped = Vec::new();
    let mut reasons = Vec::new();
    let clusters: Clusters<'_> = wasmco_guest::clusters!(request.clusters);
    for &cluster in &placement.clusters {
        if cluster as usize >= clusters.len() {
            return Err(error(format!("placement names unknown cluster {cluster}")));
        }
        if let Some(reason) = wanted.shortfall(clusters, strings, cluster) {
            dropped.push(cluster);
            reasons.push(format!(
                "{}/{}: {reason}",
                strings.get(clusters.provider(cluster)),
                strings.get(clusters.name(cluster))
            ));
        }
    }
    if dropped.is_empty() {
        return Ok(None);
    }
    let placed = || wasmco_guest::placed(&placement.clusters, &placement.groups);
    let kept = |cluster: u32| !dropped.contains(&cluster);
    if !placement.clusters.iter().any(|&cluster| kept(cluster)) {
        return Err(error(format!(
            "app {}: no placed cluster has the capacity asked for ({})",
            wanted.app,
            reasons.join("; ")
        )));
    }
    let groups: BTreeSet<u32> = placed().filter_map(|(_, group)| group).collect();
    for group in groups {
        if !placed().any(|(cluster, of)| of == Some(group) && kept(cluster)) {
            return Err(error(format!(
                "app {}: no cluster of anyOf group {} has the capacity asked for ({})",
                wanted.app,
                strings.get(group),
                reasons.join("; ")
            )));
        }
    }
    Ok(Some(PlacementEdit::Unplace(UnplaceApp {
        app: wanted.app.clone(),
        clusters: dropped,
    })))
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct CapacityPlacement;

    impl super::bindings::exports::wasmco::controller::placement::Guest for CapacityPlacement {
        fn place(
            request: super::PlacementRequest,
        ) -> Result<Vec<super::PlacementEdit>, super::ControllerError> {
            super::place(&request)
        }
    }

    super::bindings::export!(CapacityPlacement with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
