//! Eggo's cleanup: the cluster's machines given back. On every machine at
//! once: the `precleanup` hooks, then what the deploy started stopped and
//! what it put removed (see `plan::teardown`), then the `postcleanup`
//! hooks, then the unpacked package archive. An unreachable machine stops
//! the cleanup before anything changed; running it again finishes it.

use std::collections::BTreeMap;

use wasmco_core::eggo::Schedule;

use crate::deploy::{DeploySettings, Deployment, Report, Run, close};
use crate::error::DeployError;
use crate::plan;
use wasmco_core::wire::{DeployProgress, Phase};

/// Cleans up `deployment`'s machines, from `state` (whose pinned host keys
/// it checks). Returns the final state.
pub async fn cleanup(
    deployment: &Deployment,
    settings: &DeploySettings,
    state: DeployProgress,
    report: Report,
) -> Result<DeployProgress, DeployError> {
    let run = Run::new(deployment, settings, BTreeMap::new(), state, report);
    let outcome = phases(&run, deployment).await;
    run.finish(outcome.as_ref().err());
    outcome.map(|()| run.snapshot())
}

async fn phases(run: &Run<'_>, deployment: &Deployment) -> Result<(), DeployError> {
    let sessions = run.connect_all(Phase::Precleanup).await?;
    let plan = deployment.plan();
    let machines = &deployment.topology.machines;
    run.on_machines(Phase::Precleanup, machines, &sessions, |machine| {
        plan::hooks(&plan, machine, Schedule::Precleanup)
    })
    .await?;
    run.on_machines(Phase::Cleanup, machines, &sessions, |machine| {
        plan::teardown(&plan, machine)
    })
    .await?;
    run.on_machines(Phase::Postcleanup, machines, &sessions, |machine| {
        plan::postcleanup(&plan, machine)
    })
    .await?;
    close(sessions).await;
    Ok(())
}
