//! EMCO's generic placement as a wasmco placement controller.
//!
//! The intent is the DIG's generic placement intent, one entry per app:
//!
//! ```json
//! {"appIntents": [{"app": "a1", "intent": {
//!     "allOf": [{"clusterProvider": "p", "cluster": "c1"},
//!               {"clusterProvider": "p", "clusterLabel": "edge"},
//!               {"anyOf": [{"clusterProvider": "p", "clusterLabel": "east"}]}],
//!     "anyOf": [{"clusterProvider": "p", "cluster": "c4"}]}}]}
//! ```
//!
//! `allOf` places the app on every listed cluster (every cluster carrying a
//! listed label); each `anyOf` list, top-level or nested in `allOf`, is one
//! group of which the host keeps exactly one cluster.

mod intent;

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
    PlaceApp, PlacementEdit, PlacementRequest, UnplaceApp,
};
pub use bindings::wasmco::controller::types::{
    AppPlacement, ClusterTable, ControllerError, Strings,
};

use intent::{ClusterSelector, GenericPlacementIntent, PlacementEntry};
use wasmco_guest::{Clusters, StringTable};

/// Name of the top-level anyOf group; nested groups are named by position.
const TOP_LEVEL_ANY_OF: &str = "anyOf";

/// Computes the placement edits for every app intent in `request.intent`.
///
/// Public so that the same logic can run natively (benchmarks, unit tests).
pub fn place(request: &PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
    let intent: GenericPlacementIntent = serde_json::from_str(&request.intent)
        .map_err(|e| error(format!("generic placement intent is not valid: {e}")))?;
    let strings = StringTable::new(&request.strings.data, &request.strings.ends);
    let mut edits = Vec::new();
    for app_intent in &intent.app_intents {
        if !request
            .apps
            .iter()
            .any(|&app| strings.get(app) == app_intent.app)
        {
            return Err(error(format!(
                "app intent names app {:?}, which is not part of the composite app",
                app_intent.app
            )));
        }
        place_app(
            request,
            strings,
            &app_intent.app,
            &app_intent.intent,
            &mut edits,
        )?;
    }
    Ok(edits)
}

fn place_app(
    request: &PlacementRequest,
    strings: StringTable<'_>,
    app: &str,
    intent: &intent::AppPlacementIntent,
    edits: &mut Vec<PlacementEdit>,
) -> Result<(), ControllerError> {
    let mut all_of = Vec::new();
    for (position, entry) in intent.all_of.iter().enumerate() {
        match entry {
            PlacementEntry::Cluster(selector) => {
                let matched = matching_clusters(&request.clusters, strings, selector);
                if matched.is_empty() {
                    return Err(error(format!(
                        "app {app}: allOf entry {position} ({}) matches no cluster",
                        selector.describe()
                    )));
                }
                all_of = merged(&all_of, &matched);
            }
            PlacementEntry::AnyOf { any_of } => {
                let group = format!("allOf[{position}].anyOf");
                edits.push(any_of_group(request, strings, app, any_of, group)?);
            }
        }
    }
    if !all_of.is_empty() {
        edits.push(PlacementEdit::Place(PlaceApp {
            app: app.to_owned(),
            clusters: all_of,
            group: None,
        }));
    }
    if !intent.any_of.is_empty() {
        let selectors: Vec<ClusterSelector> = intent
            .any_of
            .iter()
            .map(|entry| match entry {
                PlacementEntry::Cluster(selector) => Ok(selector.clone()),
                PlacementEntry::AnyOf { .. } => Err(error(format!(
                    "app {app}: anyOf may not nest another anyOf"
                ))),
            })
            .collect::<Result<_, _>>()?;
        edits.push(any_of_group(
            request,
            strings,
            app,
            &selectors,
            TOP_LEVEL_ANY_OF.to_owned(),
        )?);
    }
    Ok(())
}

/// The union of two ascending lists without repeats, ascending. Each
/// entry's matches come in table order, so merging keeps `allOf`'s
/// clusters sorted without sorting them.
fn merged(left: &[u32], right: &[u32]) -> Vec<u32> {
    let mut union = Vec::with_capacity(left.len() + right.len());
    let (mut l, mut r) = (0, 0);
    while let (Some(&a), Some(&b)) = (left.get(l), right.get(r)) {
        union.push(a.min(b));
        l += usize::from(a <= b);
        r += usize::from(b <= a);
    }
    union.extend_from_slice(&left[l..]);
    union.extend_from_slice(&right[r..]);
    union
}

fn any_of_group(
    request: &PlacementRequest,
    strings: StringTable<'_>,
    app: &str,
    selectors: &[ClusterSelector],
    group: String,
) -> Result<PlacementEdit, ControllerError> {
    // Members in the order the selectors found them (the host keeps the
    // first); `seen` has a bit per cluster, so a repeat costs no search.
    let mut members = Vec::new();
    let mut seen = vec![0u64; request.clusters.provider.len().div_ceil(64)];
    for selector in selectors {
        for index in matching_clusters(&request.clusters, strings, selector) {
            let bit = 1u64 << (index % 64);
            if let Some(word) = seen.get_mut(index as usize / 64)
                && *word & bit == 0
            {
                *word |= bit;
                members.push(index);
            }
        }
    }
    if members.is_empty() {
        let wanted: Vec<String> = selectors.iter().map(ClusterSelector::describe).collect();
        return Err(error(format!(
            "app {app}: {group} group matches no cluster (wanted one of: {})",
            wanted.join(", ")
        )));
    }
    Ok(PlacementEdit::Place(PlaceApp {
        app: app.to_owned(),
        clusters: members,
        group: Some(group),
    }))
}

/// Indices of the clusters that `selector` names, in request order. The
/// selector's strings are looked up once; the scan compares string ids.
fn matching_clusters(
    table: &ClusterTable,
    strings: StringTable<'_>,
    selector: &ClusterSelector,
) -> Vec<u32> {
    let clusters: Clusters<'_> = wasmco_guest::clusters!(table);
    let Some(provider) = strings.find(&selector.provider) else {
        return Vec::new();
    };
    let matched = match (&selector.cluster, &selector.label) {
        (Some(name), _) => strings
            .find(name)
            .map(|name| clusters.named(provider, name)),
        (None, Some(label)) => strings
            .find(label)
            .map(|label| clusters.labelled(provider, label)),
        (None, None) => None,
    };
    matched.unwrap_or_default()
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// Every call is a fresh instance: its heap is never reused.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: wasmco_guest::OneCallAllocator = wasmco_guest::OneCallAllocator;

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct GenericPlacement;

    impl super::bindings::exports::wasmco::controller::placement::Guest for GenericPlacement {
        fn place(
            request: super::PlacementRequest,
        ) -> Result<Vec<super::PlacementEdit>, super::ControllerError> {
            super::place(&request)
        }
    }

    super::bindings::export!(GenericPlacement with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
