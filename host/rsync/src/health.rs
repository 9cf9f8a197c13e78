//! Cluster health: each cluster's API server is probed (its `/version`,
//! bounded by the request timeout), steadily while it answers and with
//! backoff while it does not. What the probe sees is stored for the API;
//! a cluster that comes back nudges every worker, so what it missed is
//! reconciled at once.

use std::sync::{Arc, Weak};

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::{ClusterHealth, ContextStore, Reachability, now};

use crate::clients::Clients;
use crate::config::RsyncConfig;
use crate::stored;
use crate::target::SyncError;
use crate::tasks::KeyedTasks;

/// What hears that a cluster answers again after being away.
pub(crate) type CameBack = Box<dyn Fn(&ClusterRef) + Send + Sync>;

/// The probes of the clusters this host watches over, and what they saw.
pub(crate) struct Health {
    contexts: ContextStore,
    clients: Arc<Clients>,
    config: Arc<RsyncConfig>,
    runtime: tokio::runtime::Handle,
    /// The running probes, by cluster.
    probes: KeyedTasks<ClusterRef>,
    came_back: CameBack,
}

impl Health {
    pub(crate) fn new(
        contexts: ContextStore,
        clients: Arc<Clients>,
        config: Arc<RsyncConfig>,
        runtime: tokio::runtime::Handle,
        came_back: CameBack,
    ) -> Self {
        Health {
            contexts,
            clients,
            config,
            runtime,
            probes: KeyedTasks::default(),
            came_back,
        }
    }

    /// Starts probing `cluster`, unless it is probed already.
    pub(crate) fn probe(self: &Arc<Self>, cluster: ClusterRef) {
        let health = Arc::downgrade(self);
        let probed = cluster.clone();
        self.probes
            .start(cluster, &self.runtime, move || probe_loop(health, probed));
    }

    /// Stops probing the clusters `which` picks.
    pub(crate) fn stop(&self, which: impl Fn(&ClusterRef) -> bool) {
        self.probes.stop(which);
    }

    async fn probe_once(&self, cluster: &ClusterRef) -> Result<String, SyncError> {
        let target = self.clients.target(cluster).await?;
        // The client's own timeouts bound each request; this bounds the
        // whole probe, discovery and TLS included.
        match tokio::time::timeout(self.config.request_timeout, target.version()).await {
            Ok(answer) => answer,
            Err(_) => Err(SyncError::TimedOut(self.config.request_timeout)),
        }
    }

    /// A reconcile's request reached `cluster`: a record that says it is
    /// unreachable is put right now rather than at the next probe (which
    /// may be a backoff away), so statuses do not show it away.
    pub(crate) async fn reached(&self, cluster: &ClusterRef) {
        let owned = cluster.clone();
        let last = stored::off_the_workers(&self.contexts, move |c| c.health(&owned));
        let Ok(Some(last)) = last.await else {
            return;
        };
        if last.state == Reachability::Reachable {
            return;
        }
        let health = ClusterHealth {
            state: Reachability::Reachable,
            since: now(),
            ..last
        };
        let owned = cluster.clone();
        let written =
            stored::off_the_workers(&self.contexts, move |c| c.put_health(&owned, &health, None));
        if let Err(error) = written.await {
            tracing::warn!(%cluster, %error, "could not record cluster health");
        }
    }
}

/// What the next health record is, after a probe's `answer`.
fn next_health(last: Option<&ClusterHealth>, answer: &Result<String, SyncError>) -> ClusterHealth {
    let state = match answer {
        Ok(_) => Reachability::Reachable,
        Err(_) => Reachability::Unreachable,
    };
    let since = match last {
        Some(last) if last.state == state => last.since.clone(),
        _ => now(),
    };
    ClusterHealth {
        state,
        since,
        last_error: match answer {
            Err(error) => Some(wasmco_core::limits::bounded(error.to_string())),
            Ok(_) => last.and_then(|l| l.last_error.clone()),
        },
        version: match answer {
            Ok(version) => Some(version.clone()),
            Err(_) => last.and_then(|l| l.version.clone()),
        },
    }
}

/// Probes `cluster` until the engine is dropped or the probe is stopped.
async fn probe_loop(weak: Weak<Health>, cluster: ClusterRef) {
    let mut last = match weak.upgrade() {
        Some(probes) => {
            let owned = cluster.clone();
            stored::off_the_workers(&probes.contexts, move |c| c.health(&owned))
                .await
                .ok()
                .flatten()
        }
        None => None,
    };
    let mut retries = None;
    loop {
        let Some(probes) = weak.upgrade() else {
            return;
        };
        let answer = probes.probe_once(&cluster).await;
        let health = next_health(last.as_ref(), &answer);
        let came_back = health.state == Reachability::Reachable
            && last
                .as_ref()
                .is_some_and(|l| l.state == Reachability::Unreachable);
        if last.as_ref() != Some(&health) {
            // One host probes a cluster; should two for a moment (while
            // hosts come and go), the later record is as true as the other.
            let (owned, record) = (cluster.clone(), health.clone());
            let written = stored::off_the_workers(&probes.contexts, move |c| {
                c.put_health(&owned, &record, None)
            });
            if let Err(error) = written.await {
                tracing::warn!(%cluster, %error, "could not record cluster health");
            }
            match &answer {
                Ok(version) => tracing::info!(%cluster, %version, "cluster reachable"),
                Err(error) => tracing::warn!(%cluster, %error, "cluster unreachable"),
            }
        }
        if came_back {
            (probes.came_back)(&cluster);
        }
        let pause = match answer {
            Ok(_) => {
                retries = None;
                probes.config.probe_interval
            }
            Err(_) => retries
                .get_or_insert_with(|| probes.config.retries())
                .next()
                .unwrap_or(probes.config.backoff.1),
        };
        last = Some(health);
        drop(probes);
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_moves_only_when_the_state_does() {
        let down = next_health(None, &Err(SyncError::Config("refused".into())));
        assert_eq!(down.state, Reachability::Unreachable);
        assert_eq!(down.last_error.as_deref(), Some("kubeconfig: refused"));
        let still_down = next_health(Some(&down), &Err(SyncError::Config("again".into())));
        assert_eq!(still_down.since, down.since);
        assert_eq!(still_down.last_error.as_deref(), Some("kubeconfig: again"));
        let up = next_health(Some(&still_down), &Ok("v1.34.4".into()));
        assert_eq!(up.state, Reachability::Reachable);
        assert_eq!(up.version.as_deref(), Some("v1.34.4"));
        // The error that made it unreachable stays to be read.
        assert_eq!(up.last_error.as_deref(), Some("kubeconfig: again"));
    }
}
