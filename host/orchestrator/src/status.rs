//! What a target's status shows: its context and what rsync recorded for
//! it; and the clusters' health as placement under a failover intent
//! reads it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, SystemTime};

use wasmco_core::ClusterRef;
use wasmco_core::specs::FailoverIntentSpec;
use wasmco_store::appcontext::{
    Connectivity, ContextStore, DigState, Reachability, ResourceStatus, StoredContext, Tally,
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
    /// rsync has not finished a whole pass towards the latest action yet:
    /// an update or rollback may still be removing what the previous
    /// revision put elsewhere, and a rollback's statuses are from before.
    pub reconciling: bool,
}

/// A context and rsync's tally of each of its cells (an app on a
/// cluster): what the status page shows, without each resource's status.
#[derive(Debug, Clone)]
pub struct TalliedContext {
    /// The context.
    pub context: StoredContext,
    /// app → cluster → tally; a cell with none has nothing recorded yet.
    pub tallies: HashMap<String, HashMap<ClusterRef, Tally>>,
    /// Whether rsync reaches each cluster.
    pub connectivity: BTreeMap<ClusterRef, Connectivity>,
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
    let connectivity = connectivity(contexts, key, &context, &unreachable(contexts)?)?;
    let reconciling =
        state.state.is_deployed() && contexts.reconciled(key)? < state.actions.len() as u64;
    Ok((
        state,
        Some(SyncedContext {
            context,
            statuses,
            connectivity,
            service_discovery: None,
            reconciling,
        }),
    ))
}

/// The state and tallied context of what is stored under `key`, given
/// the clusters the probes find `unreachable` now.
pub(crate) fn tallied(
    contexts: &ContextStore,
    key: &str,
    unreachable: &BTreeSet<ClusterRef>,
) -> Result<(DigState, Option<TalliedContext>), OrchestratorError> {
    let state = contexts.state(key)?;
    if state.revision == 0 {
        return Ok((state, None));
    }
    let context = contexts.read(key, state.revision)?;
    let mut tallies = contexts.tallies(key, state.revision)?;
    let untallied: Vec<(&str, &ClusterRef, BTreeSet<String>)> = context
        .apps
        .iter()
        .flat_map(|app| app.placement.iter().map(move |p| (app, &p.cluster)))
        .filter(|(app, cluster)| {
            tallies
                .get(&app.name)
                .is_none_or(|cells| !cells.contains_key(*cluster))
        })
        .map(|(app, cluster)| {
            let counted: BTreeSet<String> = app
                .resources_on(cluster)
                .iter()
                .map(|r| r.key.to_string())
                .collect();
            (app.name.as_str(), cluster, counted)
        })
        .filter(|(_, _, counted)| !counted.is_empty())
        .collect();
    // Cells rsync has not recorded since tallies were kept (or not at all
    // yet) are counted from every status, read once.
    if !untallied.is_empty() {
        let statuses = contexts.statuses(key, state.revision)?;
        for (app, cluster, counted) in untallied {
            let cell = |resource: &String| (app.to_owned(), cluster.clone(), resource.clone());
            let tally = Tally::of(counted.iter().filter_map(|r| statuses.get(&cell(r))));
            if tally.recorded > 0 {
                let cells = tallies.entry(app.to_owned()).or_default();
                cells.insert(cluster.clone(), tally);
            }
        }
    }
    let connectivity = connectivity(contexts, key, &context, unreachable)?;
    Ok((
        state,
        Some(TalliedContext {
            context,
            tallies,
            connectivity,
        }),
    ))
}

/// The clusters rsync's probes find unreachable now.
pub(crate) fn unreachable(
    contexts: &ContextStore,
) -> Result<BTreeSet<ClusterRef>, OrchestratorError> {
    Ok(contexts
        .healths()?
        .into_iter()
        .filter(|(_, health)| health.state == Reachability::Unreachable)
        .map(|(cluster, _)| cluster)
        .collect())
}

/// Whether rsync reaches each cluster of `context`.
fn connectivity(
    contexts: &ContextStore,
    key: &str,
    context: &StoredContext,
    unreachable: &BTreeSet<ClusterRef>,
) -> Result<BTreeMap<ClusterRef, Connectivity>, OrchestratorError> {
    let mut connectivity = contexts.connectivity(key, context.meta.revision)?;
    // A settled DIG sends nothing to its clusters, so what it recorded
    // last may be old: a cluster the probes find unreachable now is
    // being retried, whatever the DIG last saw.
    for app in &context.apps {
        for placement in &app.placement {
            if unreachable.contains(&placement.cluster) {
                connectivity.insert(placement.cluster.clone(), Connectivity::Retrying);
            }
        }
    }
    Ok(connectivity)
}

/// The clusters placement may not choose for a DIG under `spec`: those
/// unreachable now, and those back for less than its healthy period.
pub(crate) fn avoided(
    contexts: &ContextStore,
    spec: &FailoverIntentSpec,
) -> Result<BTreeSet<ClusterRef>, OrchestratorError> {
    let now = SystemTime::now();
    let healthy = Duration::from_secs(spec.healthy_seconds);
    Ok(contexts
        .healths()?
        .into_iter()
        .filter(|(_, health)| match health.state {
            Reachability::Unreachable => true,
            // A record keeps its last error once the cluster is back: its
            // `since` is then when it came back.
            Reachability::Reachable => {
                health.last_error.is_some() && age(&health.since, now) < healthy
            }
        })
        .map(|(cluster, _)| cluster)
        .collect())
}

/// How long ago `since` (RFC 3339) was; zero when it cannot be read.
pub(crate) fn age(since: &str, now: SystemTime) -> Duration {
    humantime::parse_rfc3339(since)
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .unwrap_or_default()
}
