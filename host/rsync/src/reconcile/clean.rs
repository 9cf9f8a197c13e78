//! Removing what a target no longer puts on a cluster, and recording a
//! terminated revision's objects as gone only once they are.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use wasmco_core::hooks::HookEvent;
use wasmco_core::resource::Resource;
use wasmco_store::appcontext::{ResourceStatus, StoredApp};

use super::ClusterWork;
use crate::target::Labels;
use crate::worker::Settled;
use crate::{APP_LABEL, DIG_LABEL, RsyncError, labels};

impl ClusterWork {
    /// Deletes the objects with the target's labels of `kinds` that are not
    /// in `keep` (app, `name+Kind`), latest app first; when `terminated`,
    /// records the revision's objects on this cluster as Deleted once
    /// none is left.
    pub(super) async fn clean(
        self,
        kinds: BTreeSet<(String, String)>,
        keep: HashSet<(String, String)>,
        terminated: bool,
    ) -> Result<Settled, RsyncError> {
        let _permit = self.inner.cluster_slot().await;
        let found = match self.list(&kinds, &labels(&self.key, None)).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(target = %self.key, cluster = %self.cluster, %error, "could not list for clean-up");
                return Ok(Settled::Incomplete);
            }
        };
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
        let this = &self;
        for wave in undesired.chunk_by(|a, b| order(a) == order(b)) {
            let mut waiting = wave.iter();
            let mut in_flight = FuturesUnordered::new();
            loop {
                while in_flight.len() < self.inner.config.parallel_applies.max(1) {
                    let Some((app, object)) = waiting.next() else {
                        break;
                    };
                    in_flight.push(async move { (app, object, this.delete(object).await) });
                }
                let Some((app, object, deleted)) = in_flight.next().await else {
                    break;
                };
                let key = object.key.to_string();
                match deleted {
                    Ok(()) => {
                        self.inner.metrics.object("deleted");
                        self.applied.forget(&self.cluster, app, &key);
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
            settled = settled.max(self.record_terminated(&failed).await?);
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
    /// when the cluster no longer holds them, Failed when deleting failed
    /// or when what it holds under that name is not this target's (an
    /// object it was refused, say): never Deleted while it is there.
    async fn record_terminated(
        &self,
        failed: &BTreeMap<(String, String), String>,
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
        let ours = crate::label_value(&self.key);
        // One of this target's own objects still there was created after the
        // clean-up listed the cluster (an apply of the reconcile this one
        // superseded, in flight when it was stopped): delete again later.
        let mut settled = Settled::Idle;
        for app in apps {
            let mut recorded = self.recorded(&app.name)?;
            let statuses: Vec<_> = app
                .resources_on(&self.cluster)
                .into_iter()
                .map(|r| {
                    let key = r.key.to_string();
                    let still_there = held
                        .get(&key)
                        .filter(|object| object.namespace == r.namespace || r.namespace.is_none());
                    let status = match (failed.get(&(app.name.clone(), key.clone())), still_there) {
                        (Some(error), _) => ResourceStatus::failed(r, error.clone()),
                        (None, Some(object))
                            if object.manifest["metadata"]["labels"][DIG_LABEL] == ours.as_str() =>
                        {
                            settled = Settled::Incomplete;
                            ResourceStatus::failed(
                                r,
                                format!(
                                    "{} {} is still on the cluster; deleting it again",
                                    r.key.kind, r.key.name
                                ),
                            )
                        }
                        (None, Some(object)) => {
                            let owner = object.manifest["metadata"]["labels"][DIG_LABEL]
                                .as_str()
                                .map_or_else(
                                    || "not by wasmco".to_owned(),
                                    |owner| format!("by deployment intent group {owner}"),
                                );
                            ResourceStatus::failed(
                                r,
                                format!(
                                    "{} {} stays on the cluster: it is managed {owner}, not by this deployment",
                                    r.key.kind, r.key.name
                                ),
                            )
                        }
                        (None, None) => ResourceStatus::deleted(r),
                    };
                    (key, status)
                })
                .collect();
            self.record(&app.name, &mut recorded, &statuses)?;
        }
        Ok(settled)
    }

    /// Deletes `object` and waits (bounded) until it is gone.
    pub(super) async fn delete(&self, object: &Resource) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.inner.config.ready_timeout;
        let mut last = "not deleted in time".to_owned();
        while tokio::time::Instant::now() < deadline {
            let gone = match self.target().await {
                Ok(target) => target.delete(object).await,
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
