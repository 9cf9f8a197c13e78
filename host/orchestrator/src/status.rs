//! What a target's status shows: its context and what rsync recorded for
//! it.

use std::collections::{BTreeMap, BTreeSet};

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::{
    Connectivity, ContextStore, DigState, Reachability, ResourceStatus, StoredContext,
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
    let mut connectivity = contexts.connectivity(key, state.revision)?;
    // A settled DIG sends nothing to its clusters, so what it recorded
    // last may be old: a cluster the probes find unreachable now is
    // being retried, whatever the DIG last saw.
    let placed: BTreeSet<&ClusterRef> = context
        .apps
        .iter()
        .flat_map(|app| app.placement.iter().map(|p| &p.cluster))
        .collect();
    for (cluster, health) in contexts.healths()? {
        if health.state == Reachability::Unreachable && placed.contains(&cluster) {
            connectivity.insert(cluster, Connectivity::Retrying);
        }
    }
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
