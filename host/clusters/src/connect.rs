//! Opening a run's sessions: every machine's before anything changes, or
//! only those that answer (machines leaving a cluster may be gone).

use wasmco_nodes::{HostKeyPolicy, NodeAddress, NodeError, NodeSession, on_each};

use crate::deploy::{Run, Sessions};
use crate::error::DeployError;
use crate::topology::Machine;
use wasmco_core::wire::Phase;

impl Run<'_> {
    /// One session per machine, all opened before anything changes, so an
    /// unreachable machine or a wrong key stops the run before it began;
    /// a failure is `phase`'s, the run's first.
    pub(crate) async fn connect_all(&self, phase: Phase) -> Result<Sessions, DeployError> {
        self.connect(phase, self.deployment.topology.machines.iter())
            .await
    }

    /// One session on each of `machines`, as [`Run::connect_all`].
    pub(crate) async fn connect<'m>(
        &self,
        phase: Phase,
        machines: impl IntoIterator<Item = &'m Machine>,
    ) -> Result<Sessions, DeployError> {
        self.connect_each(phase, machines)
            .await
            .into_iter()
            .map(|(name, session)| session.map(|session| (name, session)))
            .collect::<Result<_, NodeError>>()
            .map_err(|error| DeployError::Node { phase, error })
    }

    /// A session on each of `machines` that answers; the others keep the
    /// error in their progress and are left out.
    pub(crate) async fn connect_reachable<'m>(
        &self,
        phase: Phase,
        machines: impl IntoIterator<Item = &'m Machine>,
    ) -> Sessions {
        self.connect_each(phase, machines)
            .await
            .into_iter()
            .filter_map(|(name, session)| Some((name, session.ok()?)))
            .collect()
    }

    async fn connect_each<'m>(
        &self,
        phase: Phase,
        machines: impl IntoIterator<Item = &'m Machine>,
    ) -> Vec<(String, Result<NodeSession, NodeError>)> {
        let mut machines: Vec<&Machine> = machines.into_iter().collect();
        let mut seen = std::collections::BTreeSet::new();
        machines.retain(|machine| seen.insert(machine.name.clone()));
        self.with_state(|state| {
            state.phase.get_or_insert(phase);
        });
        on_each(machines, self.settings.parallel, |machine| async move {
            self.update(&machine.name, |progress| {
                progress.phase.get_or_insert(phase);
                progress.step = Some("connect over SSH".to_owned());
            });
            let pinned = self.progress_of(&machine.name, |progress| progress.host_key.clone());
            let policy = pinned.map_or(HostKeyPolicy::FirstContact, HostKeyPolicy::Pinned);
            let address = NodeAddress {
                name: machine.name.clone(),
                host: machine.ip.to_string(),
                port: machine.port,
            };
            let session = NodeSession::connect(
                &address,
                &self.deployment.login,
                &policy,
                &self.settings.session,
            )
            .await;
            self.update(&machine.name, |progress| match &session {
                Ok(session) => {
                    progress.step = None;
                    progress.host_key = Some(session.host_key().to_owned());
                    progress.error = None;
                }
                Err(error) => progress.error = Some(error.to_string()),
            });
            (machine.name.clone(), session)
        })
        .await
    }
}
