//! Removing what a target no longer puts on a cluster, and recording a
//! terminated revision's objects as gone only once they are.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{Deployed, ResourceStatus, StoredApp};

use super::cluster::ClusterWork;
use super::hooks::Hooks;
use super::settled::Settled;
use crate::error::RsyncError;
use crate::owner::{self, APP_LABEL, DIG_LABEL, Holder, field_manager, labels};
use crate::target::Labels;

/// The order objects are removed in: latest app first, and within an
/// app the reverse of apply order; objects of one app and rank go
/// several at a time.
type RemovalOrder = (Reverse<Option<usize>>, Reverse<u8>);

/// What removing the undesired objects did.
struct Removed {
    settled: Settled,
    /// Why each object that could not be removed was not, by app and
    /// `name+Kind`.
    failed: BTreeMap<(String, String), String>,
    /// The adopted objects given back, by `name+Kind`.
    released: HashSet<String>,
}

/// Deletes the objects with the target's labels of `kinds` that are not
/// in `keep` (app label, `name+Kind`), latest app first, and gives back
/// the adopted ones instead; when `terminated`, records the revision's
/// objects on this cluster as Deleted (or Released) once none is left.
pub(super) async fn clean(
    work: ClusterWork,
    kinds: BTreeSet<(String, String)>,
    keep: HashSet<(String, String)>,
    terminated: bool,
) -> Result<Settled, RsyncError> {
    let _permit = work.reconciler.cluster_slot().await;
    Cleanup { work: &work }.run(kinds, keep, terminated).await
}

/// One target's clean-up on one cluster.
struct Cleanup<'w> {
    work: &'w ClusterWork,
}

impl Cleanup<'_> {
    async fn run(
        &self,
        kinds: BTreeSet<(String, String)>,
        keep: HashSet<(String, String)>,
        terminated: bool,
    ) -> Result<Settled, RsyncError> {
        if !terminated && self.work.watched_since_look(None, &kinds) {
            // Whoever added an object with the target's labels since, the
            // watch saw: its repair asked for a full reconcile.
            self.work.reconciler.metrics.look_skipped();
            return Ok(Settled::Idle);
        }
        let Some(found) = self.find_ours(&kinds).await else {
            return Ok(Settled::Incomplete);
        };
        let undesired = self.undesired(found, &keep);
        // Terminating: the apps' pre-delete hooks first, latest app first.
        let installed: Vec<&StoredApp> = if terminated {
            self.work
                .context
                .apps
                .iter()
                .rev()
                .filter(|app| app.placement.iter().any(|p| p.cluster == self.work.cluster))
                .collect()
        } else {
            Vec::new()
        };
        for app in &installed {
            if let Err(failed) = Hooks::on(self.work).run(app, HookEvent::PreDelete).await? {
                tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, app = %app.name, error = %failed.message, "pre-delete hook failed; not deleting yet");
                return Ok(Settled::Incomplete);
            }
        }
        let removed = self.remove_all(&undesired).await;
        let mut settled = removed.settled;
        if terminated {
            let recorded = self.record_terminated(&removed.failed, &removed.released);
            settled = settled.max(recorded.await?);
        }
        if settled != Settled::Incomplete {
            for app in &installed {
                if let Err(failed) = Hooks::on(self.work).run(app, HookEvent::PostDelete).await? {
                    tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, app = %app.name, error = %failed.message, "post-delete hook failed");
                    return Ok(Settled::Incomplete);
                }
                if !app.hooks.is_empty() {
                    Hooks::on(self.work).forget(app).await?;
                }
            }
        }
        Ok(settled)
    }

    /// This target's objects of `kinds` on the cluster, by `name+Kind`;
    /// `None` when the cluster could not be listed.
    async fn find_ours(
        &self,
        kinds: &BTreeSet<(String, String)>,
    ) -> Option<HashMap<String, Resource>> {
        let mut found = match self
            .work
            .look(None, kinds, &labels(&self.work.key, None))
            .await
        {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, %error, "could not list for clean-up");
                return None;
            }
        };
        // What an older version labelled otherwise, looked for once per
        // worker and cluster; the applies relabel what is still wanted.
        if self.work.applied.first_look(&self.work.cluster) {
            let legacy =
                Labels::from([(DIG_LABEL.to_owned(), owner::legacy_label(&self.work.key))]);
            let label = owner::owner_label(&self.work.key);
            match self.work.list(kinds, &legacy).await {
                Ok(older) => found.extend(older.into_iter().filter(|(_, object)| {
                    owner::holder(&object.manifest, &self.work.key, &label) == Holder::Us
                })),
                Err(error) => {
                    tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, %error, "could not list for clean-up");
                    self.work.applied.look_again(&self.work.cluster);
                    return None;
                }
            }
        }
        Some(found)
    }

    /// What of `found` is not in `keep`, with its app, in removal order.
    fn undesired(
        &self,
        found: HashMap<String, Resource>,
        keep: &HashSet<(String, String)>,
    ) -> Vec<(String, Resource)> {
        let app_of = |object: &Resource| {
            object.manifest["metadata"]["labels"][APP_LABEL]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let mut undesired: Vec<(String, Resource)> = found
            .into_values()
            .map(|object| (app_of(&object), object))
            .filter(|(app, object)| !keep.contains(&(app.clone(), object.key.to_string())))
            .collect();
        undesired.sort_by_key(|entry| self.removal_order(entry));
        undesired
    }

    fn removal_order(&self, (app, object): &(String, Resource)) -> RemovalOrder {
        let rank = self
            .work
            .context
            .meta
            .app_order
            .iter()
            .position(|a| a == app);
        (Reverse(rank), Reverse(object.apply_rank()))
    }

    /// Removes `undesired` (in removal order), several objects of one app
    /// and rank at a time.
    async fn remove_all(&self, undesired: &[(String, Resource)]) -> Removed {
        let mut removed = Removed {
            settled: Settled::Idle,
            failed: BTreeMap::new(),
            released: HashSet::new(),
        };
        let at_once = self.work.reconciler.config.parallel_applies.max(1);
        for wave in undesired.chunk_by(|a, b| self.removal_order(a) == self.removal_order(b)) {
            let mut waiting = wave.iter();
            let mut in_flight = FuturesUnordered::new();
            loop {
                while in_flight.len() < at_once {
                    let Some((app, object)) = waiting.next() else {
                        break;
                    };
                    in_flight.push(async move { (app, object, self.remove(object).await) });
                }
                let Some((app, object, outcome)) = in_flight.next().await else {
                    break;
                };
                self.note_removal(&mut removed, app, object, outcome);
            }
        }
        removed
    }

    /// Counts one removal's `outcome` and notes it in `removed`.
    fn note_removal(
        &self,
        removed: &mut Removed,
        app: &str,
        object: &Resource,
        outcome: Result<&'static str, String>,
    ) {
        let key = object.key.to_string();
        match outcome {
            Ok(how) => {
                self.work.reconciler.metrics.object(how);
                self.work.applied.forget(&self.work.cluster, app, &key);
                if how == "released" {
                    removed.released.insert(key);
                }
            }
            Err(error) => {
                self.work.reconciler.metrics.object("delete-failed");
                removed.settled = Settled::Incomplete;
                removed.failed.insert((app.to_owned(), key), error);
            }
        }
    }

    /// Records the terminated revision's objects on this cluster: Deleted
    /// when the cluster no longer holds them, Released when they were given
    /// back, Failed when deleting failed or when what it holds under that
    /// name is not this target's (an object it was refused, say): never
    /// Deleted while it is there.
    async fn record_terminated(
        &self,
        failed: &BTreeMap<(String, String), String>,
        released: &HashSet<String>,
    ) -> Result<Settled, RsyncError> {
        let apps: Vec<&StoredApp> = self
            .work
            .context
            .apps
            .iter()
            .filter(|app| app.placement.iter().any(|p| p.cluster == self.work.cluster))
            .collect();
        let kinds = apps
            .iter()
            .flat_map(|app| app.resources_on(&self.work.cluster))
            .map(|r| (r.api_version.clone(), r.key.kind.clone()))
            .collect();
        // Everything of those kinds, whoever it belongs to.
        let held = match self.work.list(&kinds, &Labels::new()).await {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, %error, "could not confirm the deletion");
                return Ok(Settled::Incomplete);
            }
        };
        let label = owner::owner_label(&self.work.key);
        // One of this target's own objects still there was created after the
        // clean-up listed the cluster (an apply of the reconcile this one
        // superseded, in flight when it was stopped): delete again later.
        let mut settled = Settled::Idle;
        for app in apps {
            let mut recorded = self.work.recorded(&app.name).await?;
            let statuses: Vec<_> = app
                .resources_on(&self.work.cluster)
                .into_iter()
                .map(|r| {
                    let key = r.key.to_string();
                    let still_there = held
                        .get(&key)
                        .filter(|object| object.namespace == r.namespace || r.namespace.is_none());
                    let holder =
                        still_there.map(|o| owner::holder(&o.manifest, &self.work.key, &label));
                    let given_back = released.contains(&key)
                        || recorded
                            .get(&key)
                            .is_some_and(|s| s.deployed == Deployed::Released);
                    let failed = failed.get(&(app.name.clone(), key.clone()));
                    let (status, ours) = self.terminated_status(r, failed, holder, given_back);
                    if ours {
                        settled = Settled::Incomplete;
                    }
                    (key, status)
                })
                .collect();
            self.work
                .record(&app.name, &mut recorded, &statuses)
                .await?;
        }
        Ok(settled)
    }

    /// The status of `r` of a terminated revision: how removing it went
    /// (`failed`), who holds its name now, whether it was `given_back`;
    /// and whether it is still this target's, to delete again.
    fn terminated_status(
        &self,
        r: &Resource,
        failed: Option<&String>,
        holder: Option<Holder>,
        given_back: bool,
    ) -> (ResourceStatus, bool) {
        let status = match (failed, holder) {
            (Some(error), _) => ResourceStatus::failed(r, error.clone()),
            // Given back in this pass or an earlier one: nobody's now.
            (None, None | Some(Holder::Nobody)) if given_back => ResourceStatus::released(r),
            (None, Some(Holder::Us)) => {
                let again = format!(
                    "{} {} is still on the cluster; deleting it again",
                    r.key.kind, r.key.name
                );
                return (ResourceStatus::failed(r, again), true);
            }
            (None, Some(Holder::Another(other))) => ResourceStatus::failed(
                r,
                self.stays(r, &self.work.owned_elsewhere(r, other.as_deref())),
            ),
            (None, Some(Holder::Nobody)) => {
                ResourceStatus::failed(r, self.stays(r, "it was not made by wasmco"))
            }
            (None, None) => ResourceStatus::deleted(r),
        };
        (status, false)
    }

    /// Why `resource` stays on the cluster after a terminate.
    fn stays(&self, resource: &Resource, why: &str) -> String {
        format!(
            "{} {} stays on the cluster: {why}; this deployment never held it",
            resource.key.kind, resource.key.name
        )
    }

    /// Takes one of this target's objects off the cluster: deleted, or
    /// given back when rsync adopted it; what was done, for the metrics.
    async fn remove(&self, object: &Resource) -> Result<&'static str, String> {
        if self.work.adopted(&object.manifest) {
            let manager = field_manager(&self.work.key);
            let manager = &manager;
            return self
                .work
                .with_retries(|target| async move { target.release(object, manager).await })
                .await
                .map(|()| "released")
                .map_err(|error| format!("giving back what was adopted: {error}"));
        }
        self.work.delete(object).await.map(|()| "deleted")
    }
}
