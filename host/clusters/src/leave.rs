//! Eggo's delete: machines taken out of a running cluster. A node that runs
//! pods is cordoned and drained first (within a bound), an etcd member
//! leaves the members while they still have their quorum, and then each
//! machine is given back as a cleanup gives machines back; the Nodes are
//! deleted and the other machines forget the routes to them. The
//! deployment still lists the leaving machines; the caller takes them out
//! of its file once this succeeded.

use wasmco_core::FieldError;
use wasmco_core::eggo::Schedule;
use wasmco_core::wire::{DeployProgress, Phase};

use crate::commands;
use crate::deploy::{DeploySettings, Deployment, Report, Run, Sessions, close};
use crate::error::DeployError;
use crate::plan::{self, Plan};
use crate::topology::Machine;

/// Takes the machines called `leaving` out of `deployment`'s cluster, from
/// `state`. Returns the final state.
pub async fn remove_nodes(
    deployment: &Deployment,
    settings: &DeploySettings,
    state: DeployProgress,
    report: Report,
    leaving: &[String],
) -> Result<DeployProgress, DeployError> {
    let refused = |reason: String| DeployError::Refused(vec![FieldError::new("nodes", reason)]);
    let topology = &deployment.topology;
    let first = topology
        .first_master()
        .ok_or_else(|| refused("the cluster has no master".to_owned()))?;
    let mut machines = Vec::new();
    for name in leaving {
        match topology.machine(name) {
            Some(machine) if machine.name == first.name => {
                return Err(refused(format!(
                    "{name} is the first master, which the cluster is reached and joined \
                     through; it leaves only with the whole cluster (cleanup)"
                )));
            }
            Some(machine) => machines.push(machine),
            None => return Err(refused(format!("{name} is not a machine of the cluster"))),
        }
    }
    let run = Run::new(deployment, settings, Default::default(), state, report);
    let outcome = phases(&run, first, &machines).await;
    run.finish(outcome.as_ref().err());
    outcome.map(|()| run.snapshot())
}

async fn phases(run: &Run<'_>, first: &Machine, leaving: &[&Machine]) -> Result<(), DeployError> {
    let deployment = run.deployment;
    let plan = deployment.plan();
    let names: Vec<String> = leaving.iter().map(|machine| machine.name.clone()).collect();
    let staying = deployment.topology.without(&names);
    let routed: Vec<&Machine> = staying.with(|roles| roles.worker).collect();
    // A member that stays removes the leaving ones.
    let remover = staying.with(|roles| roles.etcd).next();
    let (sessions, reached) = connect(
        run,
        [first].into_iter().chain(remover).chain(routed.clone()),
        leaving,
    )
    .await?;
    let drain_timeout = run.settings.drain_timeout;
    run.on_machines(Phase::Drain, [first], &sessions, |_| {
        leaving
            .iter()
            .filter(|machine| machine.roles.worker)
            .map(|machine| commands::drain(machine, drain_timeout))
            .collect()
    })
    .await?;
    // Removed while the members still have their quorum: a member stopped
    // first could leave two members unable to agree.
    run.on_machines(Phase::Drain, remover, &sessions, |remover| {
        leaving
            .iter()
            .filter(|machine| machine.roles.etcd)
            .map(|machine| plan::remove_member(remover, machine))
            .collect()
    })
    .await?;
    run.on_machines(Phase::Precleanup, reached.clone(), &sessions, |machine| {
        plan::hooks(&plan, machine, Schedule::Precleanup)
    })
    .await?;
    run.on_machines(Phase::Cleanup, reached.clone(), &sessions, |machine| {
        plan::teardown(&plan, machine)
    })
    .await?;
    let after = Plan {
        topology: &staying,
        ..plan
    };
    run.on_machines(Phase::Cleanup, [first], &sessions, |_| {
        commands::delete_nodes(
            leaving
                .iter()
                .copied()
                .filter(|machine| machine.roles.worker),
        )
    })
    .await?;
    run.on_machines(
        Phase::Cleanup,
        routed.iter().copied(),
        &sessions,
        |machine| {
            let mut steps = plan::bridge(&after, machine);
            steps.extend(plan::forget_routes(leaving));
            steps
        },
    )
    .await?;
    run.on_machines(Phase::Postcleanup, reached, &sessions, |machine| {
        plan::postcleanup(&plan, machine)
    })
    .await?;
    close(sessions).await;
    Ok(())
}

/// Sessions on `needed` (every one must answer) and on the leaving
/// machines that answer, which are returned with them. A leaving machine
/// that does not answer (dead, or never reached by a failed join) still
/// leaves: drained, its member removed, its Node deleted; only its own
/// cleanup is skipped, and its progress says so.
async fn connect<'m>(
    run: &Run<'_>,
    needed: impl IntoIterator<Item = &'m Machine>,
    leaving: &[&'m Machine],
) -> Result<(Sessions, Vec<&'m Machine>), DeployError> {
    let mut sessions = run.connect(Phase::Drain, needed).await?;
    sessions.extend(
        run.connect_reachable(Phase::Drain, leaving.iter().copied())
            .await,
    );
    let reached: Vec<&Machine> = leaving
        .iter()
        .copied()
        .filter(|machine| sessions.contains_key(&machine.name))
        .collect();
    for gone in leaving.iter().filter(|machine| !reached.contains(machine)) {
        run.update(&gone.name, |progress| {
            let why = progress.error.take().unwrap_or_default();
            progress.error = Some(format!(
                "not reached ({why}): taken out of the cluster without its own cleanup; clean \
                 it by hand before it runs a kubelet again"
            ));
        });
    }
    Ok((sessions, reached))
}
