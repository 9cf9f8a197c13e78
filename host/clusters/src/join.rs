//! Eggo's join: machines added to a running cluster. The deployment
//! already lists them (the caller laid the join file into the deploy file)
//! and its material covers them; only they are set up, in a deploy's
//! order, with three things a deploy does not need: a joining etcd member
//! is added to the running members before it starts, the bootstrap token
//! is made again for the joining kubelets, and every other machine that
//! runs pods is given a route to the new machines' pods.

use std::collections::BTreeMap;

use wasmco_core::eggo::Schedule;

use crate::commands;
use crate::deploy::{DeploySettings, Deployment, Report, Run, Sessions, bootstrap_objects, close};
use crate::error::DeployError;
use crate::plan;
use crate::topology::Machine;
use wasmco_core::FieldError;
use wasmco_core::wire::{DeployProgress, Phase};

/// Joins `joining` (node names of `deployment`'s) to its running cluster,
/// from `state`. Returns the final state.
pub async fn join(
    deployment: &Deployment,
    settings: &DeploySettings,
    state: DeployProgress,
    report: Report,
    joining: &[String],
) -> Result<DeployProgress, DeployError> {
    let plan = deployment.plan();
    let (first, machines) = scope(deployment, joining)?;
    let all_archives =
        crate::trim::machines_archives(&plan, &deployment.archives, settings.package_cache.clone())
            .await?;
    let archives: BTreeMap<_, _> = all_archives
        .into_iter()
        .filter(|(name, _)| joining.contains(name))
        .collect();
    let run = Run::new(deployment, settings, archives, state, report);
    let outcome = phases(&run, first, &machines).await;
    run.finish(outcome.as_ref().err());
    outcome.map(|()| run.snapshot())
}

/// The first master and the joining machines, or why they cannot join:
/// every name must be a machine of the deployment, and not the first
/// master (it made the cluster they join).
fn scope<'d>(
    deployment: &'d Deployment,
    names: &[String],
) -> Result<(&'d Machine, Vec<&'d Machine>), DeployError> {
    let topology = &deployment.topology;
    let first = topology.first_master().ok_or_else(|| {
        DeployError::Refused(vec![FieldError::new(
            "masters",
            "the cluster has no master",
        )])
    })?;
    let mut machines = Vec::new();
    for name in names {
        match topology.machine(name) {
            Some(machine) if machine.name != first.name => machines.push(machine),
            Some(_) => {
                return Err(DeployError::Refused(vec![FieldError::new(
                    "nodes",
                    format!("{name} is the first master, which made the cluster"),
                )]));
            }
            None => {
                return Err(DeployError::Refused(vec![FieldError::new(
                    "nodes",
                    format!("{name} is not a machine of the cluster"),
                )]));
            }
        }
    }
    Ok((first, machines))
}

async fn phases(run: &Run<'_>, first: &Machine, joining: &[&Machine]) -> Result<(), DeployError> {
    let plan = run.plan();
    let topology = &run.deployment.topology;
    // The machines that run pods route to the joining machines' pods; the
    // first master applies and waits.
    let routed: Vec<&Machine> = topology
        .with(|roles| roles.worker)
        .filter(|machine| !joining.contains(machine))
        .collect();
    let sessions = run
        .connect(
            Phase::Infrastructure,
            joining.iter().copied().chain([first]).chain(routed.clone()),
        )
        .await?;
    run.machines_up(&sessions, joining.to_vec()).await?;
    // One member at a time: etcd takes one learner at once, and each
    // joins the members before it.
    for member in joining.iter().filter(|machine| machine.roles.etcd) {
        run.on_machines(Phase::Etcd, [*member], &sessions, |machine| {
            plan::etcd(&plan, machine)
        })
        .await?;
    }
    let masters = joining
        .iter()
        .copied()
        .filter(|machine| machine.roles.master);
    run.on_machines(Phase::ControlPlane, masters, &sessions, |machine| {
        plan::control_plane(&plan, machine)
    })
    .await?;
    join_workers(run, &sessions, first, joining, &routed).await?;
    run.on_machines(
        Phase::Postjoin,
        joining.iter().copied(),
        &sessions,
        |machine| {
            let mut steps = plan::hooks(&plan, machine, Schedule::Postjoin);
            steps.push(commands::check_services(machine));
            steps
        },
    )
    .await?;
    close(sessions).await;
    Ok(())
}

/// The joining machines that run pods: their runtime and network, the
/// routes to them everywhere else, their kubelets bootstrapped with a
/// token made for them and deleted once their Nodes are Ready.
async fn join_workers(
    run: &Run<'_>,
    sessions: &Sessions,
    first: &Machine,
    joining: &[&Machine],
    routed: &[&Machine],
) -> Result<(), DeployError> {
    let plan = run.plan();
    let workers: Vec<&Machine> = joining
        .iter()
        .copied()
        .filter(|machine| machine.roles.worker)
        .collect();
    if workers.is_empty() {
        return Ok(());
    }
    run.on_machines(
        Phase::Bootstrap,
        workers.iter().copied(),
        sessions,
        |machine| plan::worker_prepare(&plan, machine),
    )
    .await?;
    run.on_machines(
        Phase::Bootstrap,
        routed.iter().copied(),
        sessions,
        |machine| plan::bridge(&plan, machine),
    )
    .await?;
    run.on_machines(Phase::Bootstrap, [first], sessions, |_| {
        bootstrap_objects(&plan)
    })
    .await?;
    run.on_machines(
        Phase::Bootstrap,
        workers.iter().copied(),
        sessions,
        |machine| plan::worker_start(&plan, machine),
    )
    .await?;
    let ready_timeout = run.settings.ready_timeout;
    run.on_machines(Phase::Addons, [first], sessions, |_| {
        let mut steps: Vec<_> = workers
            .iter()
            .map(|worker| commands::wait_for_node(worker, ready_timeout))
            .collect();
        steps.extend(commands::mark_masters(
            workers
                .iter()
                .copied()
                .filter(|machine| machine.roles.master),
        ));
        steps.push(commands::delete_bootstrap_token(&plan));
        steps
    })
    .await
}
