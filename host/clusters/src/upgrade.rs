//! A rolling upgrade: the deployment's file (its package archive with a
//! new Kubernetes or etcd) rolled out one machine at a time, the whole
//! control plane first (the API servers must never be older than the
//! kubelets), each master's API server answering before the next; then
//! each machine that runs pods cordoned and drained (within the drain
//! bound), moved to the new binaries, Ready again and uncordoned before
//! the next, so an app whose PodDisruptionBudget keeps a pod up keeps
//! running. A machine's services restart only when what they run changed
//! (a binary's digest, a file), and each binary replaced is kept beside the
//! new one (`NAME.wasmco-previous`) for a rollback.

use std::time::Duration;

use wasmco_core::wire::{DeployProgress, Phase};
use wasmco_nodes::Command;

use crate::commands;
use crate::deploy::{DeploySettings, Deployment, Report, Run, close};
use crate::error::DeployError;
use crate::plan::{self, CONFIG_DIR, Step};
use crate::topology::Machine;

/// Rolls `deployment`'s file out over its machines, from `state`. Returns
/// the final state.
pub async fn upgrade(
    deployment: &Deployment,
    settings: &DeploySettings,
    state: DeployProgress,
    report: Report,
) -> Result<DeployProgress, DeployError> {
    let plan = deployment.plan();
    let archives =
        crate::trim::machines_archives(&plan, &deployment.archives, settings.package_cache.clone())
            .await?;
    let run = Run::new(deployment, settings, archives, state, report);
    let outcome = phases(&run).await;
    run.finish(outcome.as_ref().err());
    outcome.map(|()| run.snapshot())
}

async fn phases(run: &Run<'_>) -> Result<(), DeployError> {
    let topology = &run.deployment.topology;
    let Some(first) = topology.first_master() else {
        return Err(DeployError::Refused(crate::refusals::refusals(
            &run.deployment.config,
        )));
    };
    let sessions = run.connect_all(Phase::Infrastructure).await?;
    let plan = run.plan();
    // The whole control plane before any kubelet (a kubelet may never be
    // newer than an API server): the first master first, each master's
    // API server answering before the next; etcd members with them.
    for machine in topology.with(|roles| roles.master || roles.etcd) {
        run.on_machines(Phase::Infrastructure, [machine], &sessions, |machine| {
            plan::infrastructure(&plan, machine, run.archive_of(&machine.name))
        })
        .await?;
        run.on_machines(Phase::Etcd, [machine], &sessions, |machine| {
            plan::etcd(&plan, machine)
        })
        .await?;
        run.on_machines(Phase::ControlPlane, [machine], &sessions, |machine| {
            let mut steps = plan::control_plane(&plan, machine);
            if machine.roles.master {
                steps.push(wait_for_own_api(machine, run.settings.ready_timeout));
            }
            steps
        })
        .await?;
    }
    // Then every machine that runs pods, one at a time, drained first.
    for worker in topology.with(|roles| roles.worker) {
        let drain_timeout = run.settings.drain_timeout;
        run.on_machines(Phase::Drain, [first], &sessions, |_| {
            vec![commands::drain(worker, drain_timeout)]
        })
        .await?;
        run.on_machines(Phase::Infrastructure, [worker], &sessions, |machine| {
            plan::infrastructure(&plan, machine, run.archive_of(&machine.name))
        })
        .await?;
        run.on_machines(Phase::Bootstrap, [worker], &sessions, |machine| {
            let mut steps = plan::worker_prepare(&plan, machine);
            steps.extend(plan::worker_start(&plan, machine));
            steps
        })
        .await?;
        run.on_machines(Phase::Bootstrap, [first], &sessions, |_| {
            vec![
                commands::wait_for_node(worker, run.settings.ready_timeout),
                commands::uncordon(worker),
            ]
        })
        .await?;
    }
    run.on_machines(
        Phase::Postjoin,
        topology.machines.iter(),
        &sessions,
        |machine| vec![commands::check_services(machine)],
    )
    .await?;
    close(sessions).await;
    Ok(())
}

/// Waits until `master`'s own API server answers ready (not the cluster's
/// endpoint, which another master may serve).
fn wait_for_own_api(master: &Machine, ready_timeout: Duration) -> Step {
    let seconds = ready_timeout.as_secs();
    Step::Run(Command::new(
        format!("wait for {}'s API server", master.name),
        format!(
            "export KUBECONFIG={CONFIG_DIR}/admin.conf; for i in $(seq {seconds}); do \
             kubectl --server https://127.0.0.1:6443 get --raw /readyz >/dev/null 2>&1 && exit 0; \
             sleep 1; done; kubectl --server https://127.0.0.1:6443 get --raw '/readyz?verbose' >&2; exit 1"
        ),
        ready_timeout + Duration::from_secs(30),
    ))
}
