//! Removing what a target no longer puts on a cluster, and recording a
//! terminated revision's objects as gone only once they are.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{Deployed, ResourceStatus, StoredApp};

use super::ClusterWork;
use crate::engine::RsyncError;
use crate::owner::{self, APP_LABEL, DIG_LABEL, Holder, field_manager, labels};
use crate::target::Labels;
use crate::worker::Settled;

impl ClusterWork {
    /// Deletes the objects with the target's labels of `kinds` that are not
    /// in `keep` (app label, `name+Kind`), latest app first, and gives back
    /// the adopted ones instead; when `terminated`, records the revision's
    /// objects on this cluster as Deleted (or Released) once none is left.
    pub(super) async fn clean(
        self,
        kinds: BTreeSet<(String, String)>,
        keep: HashSet<(String, String)>,
        terminated: bool,
    ) -> Result<Settled, RsyncError> {
        let _permit = self.inner.cluster_slot().await;
        let mut found = match self.list(&kinds, &labels(&self.key, None)).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not list for clean-up");
                return Ok(Settled::Incomplete);
            }
        };
        // What an older version labelled otherwise, looked for once per
        // worker and cluster; the applies relabel what is still wanted.
        if self.applied.first_look(&self.cluster) {
            let legacy = Labels::from([(DIG_LABEL.to_owned(), owner::legacy_label(&self.key))]);
            let label = owner::owner_label(&self.key);
            match self.list(&kinds, &legacy).await {
                Ok(older) => found.extend(older.into_iter().filter(|(_, object)| {
                    owner::holder(&object.manifest, &self.key, &label) == Holder::Us
                })),
                Err(error) => {
                    tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not list for clean-up");
                    self.applied.look_again(&self.cluster);
                    return Ok(Settled::Incomplete);
                }
            }
        }
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
        let app_order = &self.context.meta.app_order;
        let rank = |app: &str| app_order.iter().position(|a| a == app);
        // Latest app first, and within an app the reverse of apply order;
        // objects of one app and rank several at a time.
        let order = |(app, object): &(String, Resource)| {
            (
                std::cmp::Reverse(rank(app)),
                std::cmp::Reverse(wasmco_store::appcontext::kind_rank(object)),
            )
        };
        undesired.sort_by_key(order);
        let mut settled = Settled::Idle;
        // Terminating: the apps' pre-delete hooks first, latest app first.
        let installed: Vec<&StoredApp> = if terminated {
            self.context
                .apps
                .iter()
                .rev()
                .filter(|app| app.placement.iter().any(|p| p.cluster == self.cluster))
                .collect()
        } else {
            Vec::new()
        };
        for app in &installed {
            if let Err(failed) = self.run_hooks(app, HookEvent::PreDelete).await? {
                tracing::warn!(target = %self.key, cluster = %self.cluster, app = %app.name, error = %failed.message, "pre-delete hook failed; not deleting yet");
                return Ok(Settled::Incomplete);
            }
        }
        let mut failed: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut released: HashSet<String> = HashSet::new();
        let this = &self;
        for wave in undesired.chunk_by(|a, b| order(a) == order(b)) {
            let mut waiting = wave.iter();
            let mut in_flight = FuturesUnordered::new();
            loop {
                while in_flight.len() < self.inner.config.parallel_applies.max(1) {
                    let Some((app, object)) = waiting.next() else {
                        break;
                    };
                    in_flight.push(async move { (app, object, this.remove(object).await) });
                }
                let Some((app, object, removed)) = in_flight.next().await else {
                    break;
                };
                let key = object.key.to_string();
                match removed {
                    Ok(how) => {
                        self.inner.metrics.object(how);
                        self.applied.forget(&self.cluster, app, &key);
                        if how == "released" {
                            released.insert(key);
                        }
                    }
                    Err(error) => {
                        self.inner.metrics.object("delete-failed");
                        settled = Settled::Incomplete;
                        failed.insert((app.clone(), key), error);
                    }
                }
            }
        }
        if terminated {
            settled = settled.max(self.record_terminated(&failed, &released).await?);
        }
        if settled != Settled::Incomplete {
            for app in &installed {
                if let Err(failed) = self.run_hooks(app, HookEvent::PostDelete).await? {
                    tracing::warn!(target = %self.key, cluster = %self.cluster, app = %app.name, error = %failed.message, "post-delete hook failed");
                    return Ok(Settled::Incomplete);
                }
                if !app.hooks.is_empty() {
                    self.forget_hooks(app).await?;
                }
            }
        }
        Ok(settled)
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
            .context
            .apps
            .iter()
            .filter(|app| app.placement.iter().any(|p| p.cluster == self.cluster))
            .collect();
        let kinds = apps
            .iter()
            .flat_map(|app| app.resources_on(&self.cluster))
            .map(|r| (r.api_version.clone(), r.key.kind.clone()))
            .collect();
        // Everything of those kinds, whoever it belongs to.
        let held = match self.list(&kinds, &Labels::new()).await {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not confirm the deletion");
                return Ok(Settled::Incomplete);
            }
        };
        let label = owner::owner_label(&self.key);
        // One of this target's own objects still there was created after the
        // clean-up listed the cluster (an apply of the reconcile this one
        // superseded, in flight when it was stopped): delete again later.
        let mut settled = Settled::Idle;
        for app in apps {
            let mut recorded = self.recorded(&app.name).await?;
            let statuses: Vec<_> = app
                .resources_on(&self.cluster)
                .into_iter()
                .map(|r| {
                    let key = r.key.to_string();
                    let still_there = held
                        .get(&key)
                        .filter(|object| object.namespace == r.namespace || r.namespace.is_none());
                    let holder = still_there.map(|o| owner::holder(&o.manifest, &self.key, &label));
                    let given_back = released.contains(&key)
                        || recorded
                            .get(&key)
                            .is_some_and(|s| s.deployed == Deployed::Released);
                    let status = match (failed.get(&(app.name.clone(), key.clone())), holder) {
                        (Some(error), _) => ResourceStatus::failed(r, error.clone()),
                        // Given back in this pass or an earlier one: nobody's now.
                        (None, None | Some(Holder::Nobody)) if given_back => {
                            ResourceStatus::released(r)
                        }
                        (None, Some(Holder::Us)) => {
                            settled = Settled::Incomplete;
                            ResourceStatus::failed(
                                r,
                                format!(
                                    "{} {} is still on the cluster; deleting it again",
                                    r.key.kind, r.key.name
                                ),
                            )
                        }
                        (None, Some(Holder::Another(other))) => ResourceStatus::failed(
                            r,
                            self.stays(r, &self.owned_elsewhere(r, other.as_deref())),
                        ),
                        (None, Some(Holder::Nobody)) => {
                            ResourceStatus::failed(r, self.stays(r, "it was not made by wasmco"))
                        }
                        (None, None) => ResourceStatus::deleted(r),
                    };
                    (key, status)
                })
                .collect();
            self.record(&app.name, &mut recorded, &statuses).await?;
        }
        Ok(settled)
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
        if self.adopted(&object.manifest) {
            let manager = field_manager(&self.key);
            let manager = &manager;
            return self
                .with_retries(|target| async move { target.release(object, manager).await })
                .await
                .map(|()| "released")
                .map_err(|error| format!("giving back what was adopted: {error}"));
        }
        self.delete(object).await.map(|()| "deleted")
    }

    /// Deletes `object` (exactly that one, when it carries the uid the
    /// cluster gave it) and waits (bounded) until it is gone.
    pub(super) async fn delete(&self, object: &Resource) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.inner.config.ready_timeout;
        let mut last = "not deleted in time".to_owned();
        let uid = object.manifest["metadata"]["uid"].as_str();
        while tokio::time::Instant::now() < deadline {
            let gone = match self.target().await {
                Ok(target) => target.delete(object, uid).await,
                Err(error) => Err(error),
            };
            match gone {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) if !error.is_transient() => return Err(error.to_string()),
                Err(error) => last = format!("not deleted in time: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(last)
    }
}
