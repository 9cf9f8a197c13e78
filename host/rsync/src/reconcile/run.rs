//! One reconcile of one target: make each cluster hold what the target's
//! current revision puts there (or nothing, once terminated), and record
//! what each holds; and the repair of one object a watch saw drift.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::{DeployState, Deployed, DigState, StoredContext};

use super::cluster::ClusterWork;
use super::reconciler::Reconciler;
use super::settled::{Look, Settled};
use super::{apply, clean};
use crate::drift::Applied;
use crate::error::RsyncError;
use crate::owner;
use crate::stored;
use crate::watch::Drifted;

/// Reconciles `key` once, towards its state as stored now, looking as
/// closely as `look` asks.
///
/// `deploying` hears of the revision it deploys as soon as it is read.
pub(crate) async fn reconcile(
    reconciler: &Arc<Reconciler>,
    key: &str,
    applied: &Arc<Applied>,
    look: Look,
    deploying: impl FnOnce(Arc<StoredContext>),
) -> Result<Settled, RsyncError> {
    let owned = key.to_owned();
    let state = stored::off_the_workers(&reconciler.contexts, move |c| c.state(&owned)).await?;
    let deployed = match state.state {
        _ if state.revision == 0 => return Ok(Settled::Idle),
        DeployState::Instantiated | DeployState::Updated => true,
        DeployState::Terminated => false,
        // Stopped: nothing more until the next action.
        DeployState::Created
        | DeployState::Approved
        | DeployState::InstantiateStopped
        | DeployState::TerminateStopped => return Ok(Settled::Idle),
    };
    if !deployed
        && let Some(heir) = &state.handed_over_to
        && !holds_what_was_handed_over(reconciler, heir).await?
    {
        // Removing now would take objects the heir is about to adopt.
        return Ok(Settled::Incomplete);
    }
    // A revision this worker did not reconcile last (an update it missed,
    // a rollback) is read in full.
    let look = if applied.reconciles(state.revision) {
        look
    } else {
        Look::Full
    };
    let (owned, revision) = (key.to_owned(), state.revision);
    let context = Arc::new(
        stored::off_the_workers(&reconciler.contexts, move |c| c.read(&owned, revision)).await?,
    );
    let held = held(&state, &context);
    let mut settled = if deployed {
        deploying(context.clone());
        deploy(reconciler, key, &context, applied, look, &held).await?
    } else {
        Settled::Idle
    };
    let removed = remove_undesired(reconciler, key, &context, deployed, applied, look, &held);
    settled = settled.max(removed.await?);
    // The status's readiness is per revision, and a rollback's revision
    // was Ready once: only this record says the rollback itself is done.
    let actions = state.actions.len() as u64;
    let whole = held.is_empty() && settled != Settled::Incomplete;
    if deployed && whole && !applied.passed(actions) {
        let (owned, fence) = (key.to_owned(), reconciler.group.ownership_fence(key));
        stored::off_the_workers(&reconciler.contexts, move |c| {
            c.put_reconciled(&owned, actions, fence.as_ref())
        })
        .await?;
        applied.pass_recorded(actions);
    }
    Ok(settled)
}

/// Repairs the object `drifted` reports, if `context` (the revision
/// being deployed) puts it there; whether it needs a reconcile after.
pub(crate) async fn repair(
    reconciler: &Arc<Reconciler>,
    key: &str,
    context: &Arc<StoredContext>,
    applied: &Arc<Applied>,
    drifted: Drifted,
) -> Result<bool, RsyncError> {
    let Drifted {
        cluster,
        api_version,
        kind,
        change,
    } = drifted;
    // The state may have moved on (a terminate, an update) since the
    // worker read it: that state's reconcile sees to the object.
    let owned = key.to_owned();
    let state = stored::off_the_workers(&reconciler.contexts, move |c| c.state(&owned)).await?;
    let deploys = state.state.is_deployed();
    if !deploys
        || state.revision != context.meta.revision
        || held(&state, context).contains(&cluster)
    {
        return Ok(false);
    }
    // Not this revision's: the next reconcile removes it (a status
    // update of it changes nothing there).
    let unwanted = change.live.is_some() && !change.status_only;
    let Some(app) = context.apps.iter().find(|app| {
        change.app.as_deref() == Some(owner::app_label(&app.name).as_str())
            && app.placement.iter().any(|p| p.cluster == cluster)
    }) else {
        return Ok(unwanted);
    };
    let resources = app.resources_on(&cluster);
    let Some(resource) = resources
        .iter()
        .find(|r| r.key.name == change.name && r.key.kind == kind && r.api_version == api_version)
    else {
        return Ok(unwanted);
    };
    let work = ClusterWork::new(reconciler, key, context, &cluster, applied, Look::Full);
    work.repair(&app.name, resource, change.live, change.status_only)
        .await
}

/// Whether `heir` (a DIG a migrate handed objects to) has applied, or
/// given up on, every resource of its context; an heir no longer
/// deployed waits for nothing.
async fn holds_what_was_handed_over(
    reconciler: &Reconciler,
    heir: &str,
) -> Result<bool, RsyncError> {
    let heir = heir.to_owned();
    let read = stored::off_the_workers(&reconciler.contexts, move |c| {
        let state = c.state(&heir)?;
        if !state.state.is_deployed() || state.revision == 0 {
            return Ok(None);
        }
        let context = c.read(&heir, state.revision)?;
        let statuses = c.statuses(&heir, state.revision)?;
        Ok(Some((context, statuses)))
    });
    let Some((context, statuses)) = read.await? else {
        return Ok(true);
    };
    Ok(context.apps.iter().all(|app| {
        app.placement.iter().all(|placement| {
            app.resources_on(&placement.cluster).iter().all(|resource| {
                statuses
                    .get(&(
                        app.name.clone(),
                        placement.cluster.clone(),
                        resource.key.to_string(),
                    ))
                    .is_some_and(|s| s.deployed != Deployed::Pending)
            })
        })
    }))
}

/// The clusters the revision's rollout has not released yet: they keep
/// what they hold (the previous revision's objects, or none) meanwhile.
fn held(state: &DigState, context: &StoredContext) -> HashSet<ClusterRef> {
    let (Some(progress), Some(plan)) = (&state.rollout, &context.meta.rollout) else {
        return HashSet::new();
    };
    if progress.revision != context.meta.revision {
        return HashSet::new();
    }
    let released = usize::try_from(progress.released).unwrap_or(usize::MAX);
    plan.groups
        .iter()
        .skip(released)
        .flatten()
        .cloned()
        .collect()
}

/// Applies the context, app by app, on the clusters not `held`; an app
/// waited for by another is waited for (its `wait` seconds) when it
/// changed.
async fn deploy(
    reconciler: &Arc<Reconciler>,
    key: &str,
    context: &Arc<StoredContext>,
    applied: &Arc<Applied>,
    look: Look,
    held: &HashSet<ClusterRef>,
) -> Result<Settled, RsyncError> {
    let mut settled = Settled::Resync;
    for (index, app) in context.apps.iter().enumerate() {
        let mut clusters = JoinSet::new();
        for placement in app.placement.iter().filter(|p| !held.contains(&p.cluster)) {
            let cluster = &placement.cluster;
            let work = ClusterWork::new(reconciler, key, context, cluster, applied, look);
            clusters.spawn(apply::sync(work, index));
        }
        let mut changed = false;
        while let Some(done) = clusters.join_next().await {
            match done {
                Ok(outcome) => {
                    let outcome = outcome?;
                    settled = settled.max(outcome.settled);
                    changed |= outcome.applied > 0;
                }
                Err(error) => {
                    tracing::error!(target = %key, %error, "cluster sync panicked");
                    settled = Settled::Incomplete;
                }
            }
        }
        if changed && let Some(wait) = waited_on(context, &app.name) {
            tokio::time::sleep(Duration::from_secs(wait)).await;
        }
    }
    Ok(settled)
}

/// Deletes, on every cluster any revision used but those `held`, the
/// objects with the target's labels that the current revision does not
/// put there (all of them once terminated); records the terminated ones
/// as Deleted.
async fn remove_undesired(
    reconciler: &Arc<Reconciler>,
    key: &str,
    context: &Arc<StoredContext>,
    deployed: bool,
    applied: &Arc<Applied>,
    look: Look,
    held: &HashSet<ClusterRef>,
) -> Result<Settled, RsyncError> {
    let mut wanted: HashMap<ClusterRef, HashSet<(String, String)>> = HashMap::new();
    if deployed {
        for app in &context.apps {
            for placement in &app.placement {
                wanted.entry(placement.cluster.clone()).or_default().extend(
                    app.resources_on(&placement.cluster)
                        .iter()
                        .map(|r| (owner::app_label(&app.name), r.key.to_string())),
                );
            }
        }
    }
    // A failover's move leaves the old copies where they are until the
    // new ones are Ready, should the cluster left answer meanwhile.
    let graceful = deployed && context.meta.failover.as_ref().is_some_and(|f| f.replaces());
    let leave = graceful && !placed_ready(reconciler, key, context).await?;
    let mut settled = Settled::Idle;
    let mut clusters = JoinSet::new();
    let owned = key.to_owned();
    let footprint = stored::off_the_workers(&reconciler.contexts, move |c| c.footprint(&owned));
    for (cluster, kinds) in footprint.await?.clusters() {
        if held.contains(cluster) {
            continue;
        }
        let Some(keep) = wanted.remove(cluster).or((!leave).then(HashSet::new)) else {
            settled = Settled::Incomplete;
            continue;
        };
        let work = ClusterWork::new(reconciler, key, context, cluster, applied, look);
        clusters.spawn(clean::clean(work, kinds.clone(), keep, !deployed));
    }
    while let Some(done) = clusters.join_next().await {
        match done {
            Ok(outcome) => settled = settled.max(outcome?),
            Err(error) => {
                tracing::error!(target = %key, %error, "cluster clean-up panicked");
                settled = Settled::Incomplete;
            }
        }
    }
    Ok(settled)
}

/// Whether every resource `context` places is recorded Ready.
async fn placed_ready(
    reconciler: &Reconciler,
    key: &str,
    context: &StoredContext,
) -> Result<bool, RsyncError> {
    let (owned, revision) = (key.to_owned(), context.meta.revision);
    let tallies =
        stored::off_the_workers(&reconciler.contexts, move |c| c.tallies(&owned, revision)).await?;
    Ok(context.apps.iter().all(|app| {
        app.placement.iter().all(|placement| {
            let resources = app.resources_on(&placement.cluster).len();
            resources == 0
                || tallies
                    .get(&app.name)
                    .and_then(|cells| cells.get(&placement.cluster))
                    .is_some_and(|tally| tally.ready >= resources)
        })
    }))
}

/// Seconds to wait after `app` when a later app waits for it.
fn waited_on(context: &StoredContext, app: &str) -> Option<u64> {
    context
        .meta
        .dependencies
        .values()
        .flatten()
        .filter(|d| d.app == app)
        .map(|d| d.wait)
        .max()
}
