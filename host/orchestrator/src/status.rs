//! What a target's status shows: its context and what rsync recorded for
//! it.

use std::collections::{BTreeMap, BTreeSet};

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::{
    CellCounts, ClusterHealth, Connectivity, ContextStore, DigState, Reachability, ResourceStatus,
    StoredContext,
};

use crate::error::OrchestratorError;

/// A context and what rsync recorded for it.
#[derive(Debug, Clone)]
pub struct SyncedContext {
    /// The context.
    pub context: StoredContext,
    /// (app, cluster, `name+Kind`) → status.
    pub statuses: BTreeMap<(String, ClusterRef, String), ResourceStatus>,
    /// Whether rsync reaches each cluster.
    pub connectivity: BTreeMap<ClusterRef, Connectivity>,
    /// Why services the DIG asks to make known to their clients are not
    /// (yet): see [`crate::service_discovery`].
    pub service_discovery: Option<String>,
}

/// The state and synced context of what is stored under `key`.
pub(crate) fn synced(
    contexts: &ContextStore,
    key: &str,
) -> Result<(DigState, Option<SyncedContext>), OrchestratorError> {
    let state = contexts.state(key)?;
    if state.revision == 0 {
        return Ok((state, None));
    }
    let context = contexts.read(key, state.revision)?;
    let statuses = contexts.statuses(key, state.revision)?;
    let connectivity = connectivity(
        contexts,
        key,
        state.revision,
        &context,
        &contexts.healths()?,
    )?;
    Ok((
        state,
        Some(SyncedContext {
            context,
            statuses,
            connectivity,
            service_discovery: None,
        }),
    ))
}

/// Whether rsync reaches each cluster of `context`, as it last recorded.
fn connectivity(
    contexts: &ContextStore,
    key: &str,
    revision: u64,
    context: &StoredContext,
    healths: &[(ClusterRef, ClusterHealth)],
) -> Result<BTreeMap<ClusterRef, Connectivity>, OrchestratorError> {
    let mut connectivity = contexts.connectivity(key, revision)?;
    // A settled DIG sends nothing to its clusters, so what it recorded
    // last may be old: a cluster the probes find unreachable now is
    // being retried, whatever the DIG last saw.
    let placed: BTreeSet<&ClusterRef> = context
        .apps
        .iter()
        .flat_map(|app| app.placement.iter().map(|p| &p.cluster))
        .collect();
    for (cluster, health) in healths {
        if health.state == Reachability::Unreachable && placed.contains(cluster) {
            connectivity.insert(cluster.clone(), Connectivity::Retrying);
        }
    }
    Ok(connectivity)
}

/// A context with its statuses counted per app and cluster: what a view
/// of the whole fleet needs, read as one record per app and cluster
/// rather than one per object.
#[derive(Debug, Clone)]
pub struct SummarizedContext {
    /// The context.
    pub context: StoredContext,
    /// (app, cluster) → its resources' statuses, counted.
    pub cells: BTreeMap<(String, ClusterRef), CellCounts>,
    /// Whether rsync reaches each cluster.
    pub connectivity: BTreeMap<ClusterRef, Connectivity>,
}

/// The state and summarized context of what is stored under `key`, with
/// the clusters' `healths` read once by the caller.
pub(crate) fn summarized(
    contexts: &ContextStore,
    key: &str,
    healths: &[(ClusterRef, ClusterHealth)],
) -> Result<(DigState, Option<SummarizedContext>), OrchestratorError> {
    let state = contexts.state(key)?;
    if state.revision == 0 {
        return Ok((state, None));
    }
    let context = contexts.read(key, state.revision)?;
    let mut cells = contexts.cells(key, state.revision)?;
    // Counted by rsync as it records; a cell it has not counted (nothing
    // recorded yet, or recorded before it counted) is counted here.
    for app in &context.apps {
        for placement in &app.placement {
            let cell = (app.name.clone(), placement.cluster.clone());
            if let std::collections::btree_map::Entry::Vacant(uncounted) = cells.entry(cell) {
                let recorded =
                    contexts.statuses_on(key, state.revision, &app.name, &placement.cluster)?;
                uncounted.insert(CellCounts::of(recorded.values()));
            }
        }
    }
    let connectivity = connectivity(contexts, key, state.revision, &context, healths)?;
    Ok((
        state,
        Some(SummarizedContext {
            context,
            cells,
            connectivity,
        }),
    ))
}
