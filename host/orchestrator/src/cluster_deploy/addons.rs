//! A deployed cluster's addons (the file's `yaml` packages, CoreDNS)
//! handed to rsync as a one-app context placed on that cluster, as a
//! cluster's network intents are: rsync applies them in order, keeps them
//! there and reports them; a deploy waits until they are applied.

use std::time::{Duration, Instant};

use wasmco_clusters::Addon;
use wasmco_core::resource::Resource;
use wasmco_core::wire::{AddonsStatus, Deployed, NetworkAction, Readiness};
use wasmco_store::appcontext::DeployState;

use crate::error::OrchestratorError;
use crate::shared::{OnCluster, Shared, allow};
use crate::status::synced;

/// The composite app of addon contexts: `_` starts no real one's name.
const ADDONS_COMPOSITE_APP: &str = "_cluster-addons";
/// The one app of an addon context.
const APP: &str = "addons";
/// How often a deploy looks at what rsync did.
const POLL: Duration = Duration::from_millis(500);

/// The objects of `addons`, checked before any machine is touched.
pub(super) fn resources(addons: &[Addon]) -> Result<Vec<Resource>, OrchestratorError> {
    let mut resources = Vec::new();
    for addon in addons {
        let parsed =
            wasmco_core::files::parse_manifests(addon.manifests.as_bytes()).map_err(|e| {
                OrchestratorError::Input(format!(
                    "addons: {}: {}: {}",
                    addon.source, e.field, e.reason
                ))
            })?;
        resources.extend(parsed);
    }
    Ok(resources)
}

/// The addons of cluster `cluster` under `provider`.
pub(super) struct ClusterAddons<'a> {
    pub(super) shared: &'a Shared,
    pub(super) provider: &'a str,
    pub(super) cluster: &'a str,
}

impl ClusterAddons<'_> {
    /// Its key in the context store; no DIG's, logical cloud's or network
    /// set's.
    pub(super) fn key(&self) -> String {
        format!("{}/{ADDONS_COMPOSITE_APP}/{}", self.provider, self.cluster)
    }

    fn describe(&self) -> String {
        format!("addons of cluster {}/{}", self.provider, self.cluster)
    }

    /// Hands `resources` to rsync as the context's next revision; nothing
    /// when there are none and none were handed before.
    pub(super) fn apply(&self, resources: Vec<Resource>) -> Result<bool, OrchestratorError> {
        let key = self.key();
        let guard = self.shared.lock(&key)?;
        let state = self.shared.contexts.state(&key)?;
        if resources.is_empty() && state.revision == 0 {
            return Ok(false);
        }
        let next = allow(&self.describe(), &state, NetworkAction::Apply)?;
        let on = OnCluster {
            key: &key,
            composite_app: ADDONS_COMPOSITE_APP,
            app: APP,
            provider: self.provider,
            cluster: self.cluster,
        };
        self.shared
            .write_on_cluster(&on, resources, state, next, &guard)?;
        Ok(true)
    }

    /// Waits until rsync has applied every addon object. rsync retries
    /// what a cluster refused, so a failure counts only when `patience`
    /// runs out; the error then names the objects.
    pub(super) fn wait_applied(&self, patience: Duration) -> Result<(), OrchestratorError> {
        let deadline = Instant::now() + patience;
        loop {
            let status = self.status()?.unwrap_or_default();
            if status.applied == status.objects {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let why = if status.failed.is_empty() {
                    String::new()
                } else {
                    format!(": {}", status.failed.join("; "))
                };
                return Err(OrchestratorError::Conflict(format!(
                    "addons: {} of {} objects applied after {}s{why}",
                    status.applied,
                    status.objects,
                    patience.as_secs()
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// What rsync did with the addons, when there are any.
    pub(super) fn status(&self) -> Result<Option<AddonsStatus>, OrchestratorError> {
        let (state, synced) = synced(&self.shared.contexts, &self.key())?;
        let Some(synced) = synced.filter(|_| state.state.is_deployed()) else {
            return Ok(None);
        };
        let objects = synced.context.apps.iter().map(|app| app.base.len()).sum();
        let mut status = AddonsStatus {
            objects,
            ..AddonsStatus::default()
        };
        for resource in synced.statuses.values() {
            match resource.deployed {
                Deployed::Applied => status.applied += 1,
                Deployed::Failed => status.failed.push(format!(
                    "{} {}: {}",
                    resource.kind,
                    resource.name,
                    resource.message.as_deref().unwrap_or("failed")
                )),
                _ => {}
            }
            if resource.ready == Readiness::Ready {
                status.ready += 1;
            }
        }
        Ok(Some(status))
    }

    /// Stops rsync's work on the addons and forgets them: the cluster they
    /// were on is being taken down.
    pub(super) fn forget(&self) -> Result<(), OrchestratorError> {
        let key = self.key();
        let guard = self.shared.lock(&key)?;
        let state = self.shared.contexts.state(&key)?;
        if state.state == DeployState::Created && state.revision == 0 {
            return Ok(());
        }
        if state.state.is_deployed() {
            self.shared
                .mark(NetworkAction::Stop, &self.describe(), &key, state, &guard)?;
        }
        Ok(self.shared.contexts.forget(&key)?)
    }
}
