//! Helm hooks on one cluster: objects applied around an app's own
//! resources (pre-install before them, post-install once they are ready,
//! pre-delete and post-delete around terminate), each waited for until it
//! finishes, by weight, with Helm's delete policies.
//!
//! Hook objects carry the hook label instead of the DIG label, so the
//! level-triggered clean-up and the drift watches leave them alone; each
//! event runs once per app and cluster (the store remembers which ran).

use std::time::Duration;

use serde_json::Value;

use wasmco_core::hooks::{Hook, HookDeletePolicy, HookEvent};
use wasmco_store::appcontext::{ResourceStatus, StoredApp};

use super::cluster::ClusterWork;
use crate::error::RsyncError;
use crate::owner::{self, APP_LABEL, HOOK_LABEL, Holder, field_manager};
use crate::stored;
use crate::target::{ApplyAs, Labels};

/// Why a hook did not finish.
pub(super) struct HookFailed {
    pub(super) message: String,
}

/// Helm hooks' runs on one cluster.
pub(super) struct Hooks<'w> {
    work: &'w ClusterWork,
}

impl<'w> Hooks<'w> {
    pub(super) fn on(work: &'w ClusterWork) -> Self {
        Hooks { work }
    }

    /// Runs `app`'s hooks for `event` on this cluster, by weight, unless
    /// they ran here already; records that they ran.
    pub(super) async fn run(
        &self,
        app: &StoredApp,
        event: HookEvent,
    ) -> Result<Result<(), HookFailed>, RsyncError> {
        let hooks: Vec<&Hook> = app.hooks.iter().filter(|h| h.runs_at(event)).collect();
        if hooks.is_empty() {
            return Ok(Ok(()));
        }
        let (key, app_name, cluster) = (
            self.work.key.clone(),
            app.name.clone(),
            self.work.cluster.clone(),
        );
        let mut run = stored::off_the_workers(&self.work.reconciler.contexts, move |c| {
            c.hooks_run(&key, &app_name, &cluster)
        })
        .await?;
        if run.contains(&event) {
            return Ok(Ok(()));
        }
        let mut recorded = self.work.recorded(&app.name).await?;
        for hook in hooks {
            tracing::info!(target = %self.work.key, cluster = %self.work.cluster, app = %app.name, hook = %hook.resource.key, ?event, "running hook");
            let outcome = self.run_hook(&app.name, hook).await;
            let key = hook.resource.key.to_string();
            let status = match &outcome {
                Ok(()) => {
                    let mut status = ResourceStatus::applied(&hook.resource);
                    status.ready = wasmco_store::appcontext::Readiness::Ready;
                    status
                }
                Err(failed) => ResourceStatus::failed(&hook.resource, failed.message.clone()),
            };
            self.work
                .record(&app.name, &mut recorded, &[(key, status)])
                .await?;
            if let Err(failed) = outcome {
                return Ok(Err(HookFailed {
                    message: format!(
                        "{} hook {} {} failed: {}",
                        event_name(event),
                        hook.resource.key.kind,
                        hook.resource.key.name,
                        failed.message
                    ),
                }));
            }
        }
        run.insert(event);
        self.put_run(&app.name, run).await?;
        Ok(Ok(()))
    }

    /// Forgets which of `app`'s hooks ran here (it is gone from here), and
    /// removes the hook objects left behind.
    pub(super) async fn forget(&self, app: &StoredApp) -> Result<(), RsyncError> {
        for hook in &app.hooks {
            if let Err(error) = self.delete_own(&hook.resource).await {
                tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, hook = %hook.resource.key, %error, "could not remove a hook object");
            }
        }
        self.put_run(&app.name, Default::default()).await
    }

    /// Records which of `app`'s hooks ran here.
    async fn put_run(
        &self,
        app: &str,
        run: std::collections::BTreeSet<wasmco_core::hooks::HookEvent>,
    ) -> Result<(), RsyncError> {
        let (key, app) = (self.work.key.clone(), app.to_owned());
        let (cluster, fence) = (self.work.cluster.clone(), self.work.fence.clone());
        stored::off_the_workers(&self.work.reconciler.contexts, move |c| {
            c.put_hooks_run(&key, &app, &cluster, &run, fence.as_ref())
        })
        .await?;
        Ok(())
    }

    async fn run_hook(&self, app: &str, hook: &Hook) -> Result<(), HookFailed> {
        let failed = |message: String| HookFailed { message };
        if hook.deleted_on(HookDeletePolicy::BeforeHookCreation) {
            self.delete_own(&hook.resource).await.map_err(failed)?;
        }
        // As every apply: a project's hook of a kind the cluster holds
        // cluster-wide is refused here too.
        if let Err(refused) = self.work.within_confinement(&hook.resource).await {
            return Err(failed(refused.message));
        }
        if let Some(refused) = self.held_elsewhere(&hook.resource).await {
            return Err(failed(refused));
        }
        let labels = Labels::from([
            (HOOK_LABEL.to_owned(), owner::owner_label(&self.work.key)),
            (APP_LABEL.to_owned(), owner::app_label(app)),
        ]);
        let manifest = owner::stamped(&hook.resource.manifest, &labels, &self.work.key, false);
        let manager = field_manager(&self.work.key);
        let how = ApplyAs {
            manager: &manager,
            force: true,
        };
        let resource = &hook.resource;
        let manifest = &manifest;
        self.work
            .with_retries(|target| async move { target.apply(resource, manifest, how).await })
            .await
            .map_err(|e| failed(e.to_string()))?;
        let outcome = self.wait_finished(resource).await;
        let policy = match outcome {
            Ok(()) => HookDeletePolicy::HookSucceeded,
            Err(_) => HookDeletePolicy::HookFailed,
        };
        if hook.deleted_on(policy)
            && let Err(error) = self.delete_own(resource).await
        {
            tracing::warn!(target = %self.work.key, cluster = %self.work.cluster, hook = %resource.key, %error, "could not delete a finished hook");
        }
        outcome.map_err(failed)
    }

    /// Why a hook may not be applied under its name: an object there that
    /// is not this target's; `None` when the name is free or ours.
    async fn held_elsewhere(&self, resource: &wasmco_core::Resource) -> Option<String> {
        let found = self
            .work
            .with_retries(|target| async move { target.get(resource).await })
            .await;
        let label = owner::owner_label(&self.work.key);
        match found.map(|o| o.map(|o| owner::holder(&o, &self.work.key, &label))) {
            Ok(None | Some(Holder::Us)) => None,
            Ok(Some(Holder::Another(other))) => {
                Some(self.work.owned_elsewhere(resource, other.as_deref()))
            }
            Ok(Some(Holder::Nobody)) => Some(format!(
                "{} {} is on the cluster already and was not made by wasmco; the hook does not take it over",
                resource.key.kind, resource.key.name
            )),
            Err(error) => Some(error.to_string()),
        }
    }

    /// Deletes the object under `resource`'s name if it is this target's;
    /// anyone else's stays.
    async fn delete_own(&self, resource: &wasmco_core::Resource) -> Result<(), String> {
        let found = self
            .work
            .with_retries(|target| async move { target.get(resource).await })
            .await
            .map_err(|e| e.to_string())?;
        let label = owner::owner_label(&self.work.key);
        let Some(object) = found.filter(|o| owner::holder(o, &self.work.key, &label) == Holder::Us)
        else {
            return Ok(());
        };
        match wasmco_core::Resource::from_manifest(object) {
            Ok(object) => self.work.delete(&object).await,
            Err(error) => Err(error.to_string()),
        }
    }

    /// Polls until the hook's object has finished (bounded): a Job
    /// complete, a Pod succeeded, anything else once it exists.
    async fn wait_finished(&self, resource: &wasmco_core::Resource) -> Result<(), String> {
        let timeout = self.work.reconciler.config.ready_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            let live = match self.work.target().await {
                Ok(target) => target.get(resource).await.ok().flatten(),
                Err(_) => None,
            };
            if let Some(live) = live
                && let Some(finished) = finished(&resource.key.kind, &live)
            {
                return finished;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("it did not finish within {timeout:?}"))
    }
}

/// Whether a hook object has finished, and how; `None` while it runs.
fn finished(kind: &str, live: &Value) -> Option<Result<(), String>> {
    let condition = |wanted: &str| {
        live["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == wanted && c["status"] == "True")
    };
    match kind {
        "Job" => {
            if condition("Complete").is_some() {
                Some(Ok(()))
            } else {
                condition("Failed").map(|c| {
                    Err(format!(
                        "the Job failed: {}",
                        c["message"]
                            .as_str()
                            .or(c["reason"].as_str())
                            .unwrap_or("no reason given")
                    ))
                })
            }
        }
        "Pod" => match live["status"]["phase"].as_str() {
            Some("Succeeded") => Some(Ok(())),
            Some("Failed") => Some(Err("the Pod failed".into())),
            _ => None,
        },
        _ => Some(Ok(())),
    }
}

fn event_name(event: HookEvent) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::finished;

    #[test]
    fn a_hook_finishes_as_its_kind_says() {
        let running = json!({"status": {"active": 1}});
        assert!(finished("Job", &running).is_none());
        let complete = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert!(matches!(finished("Job", &complete), Some(Ok(()))));
        let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}});
        let Some(Err(message)) = finished("Job", &failed) else {
            panic!("a failed Job is a failed hook");
        };
        assert!(message.contains("BackoffLimitExceeded"));
        assert!(finished("Pod", &json!({"status": {"phase": "Running"}})).is_none());
        assert!(matches!(
            finished("Pod", &json!({"status": {"phase": "Succeeded"}})),
            Some(Ok(()))
        ));
        assert!(matches!(finished("ConfigMap", &json!({})), Some(Ok(()))));
    }
}
