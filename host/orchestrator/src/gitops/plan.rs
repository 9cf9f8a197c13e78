//! The next step that carries a deployment toward its file in the
//! repository: one action at a time, each started once its state allows,
//! in the order that keeps the cluster serving (machines leave, machines
//! join, then the rest of the file rolls out as an upgrade).

use wasmco_core::eggo::{DeployConfig, HostConfig, JoinFile};
use wasmco_core::wire::ClusterDeploymentState;

/// Where a deployment is, as the plan needs it.
#[derive(Debug, Clone)]
pub(super) struct Current {
    pub(super) state: ClusterDeploymentState,
    /// The kind of its last run (`Deploying`, `Joining`, …), if any.
    pub(super) run: Option<ClusterDeploymentState>,
    /// The machines its last join or delete worked on.
    pub(super) scope: Vec<String>,
    /// Its stored deploy file.
    pub(super) config: DeployConfig,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Store the deployment with the file, then deploy it.
    Create,
    /// Deploy (again), first storing the file when `replace`.
    Deploy { replace: bool },
    /// Take these machines out.
    Delete(Vec<String>),
    /// Add these machines.
    Join(JoinFile),
    /// Store the file, then roll it out.
    Upgrade,
    /// A run is under way; look again at the next poll.
    Wait,
    /// The cluster is what the file says.
    Reached,
}

impl Step {
    /// The action it starts, as the status names it.
    pub(super) fn action(&self) -> Option<&'static str> {
        match self {
            Step::Create | Step::Deploy { .. } => Some("deploy"),
            Step::Delete(_) => Some("delete"),
            Step::Join(_) => Some("join"),
            Step::Upgrade => Some("upgrade"),
            Step::Wait | Step::Reached => None,
        }
    }
}

/// The step from `current` (none: no deployment yet) toward `desired`.
pub(super) fn next_step(current: Option<&Current>, desired: &DeployConfig) -> Step {
    use ClusterDeploymentState::*;
    let Some(current) = current else {
        return Step::Create;
    };
    let changed = normalised(&current.config) != normalised(desired);
    let step = match (current.state, current.run) {
        (state, _) if state.is_running() => Step::Wait,
        (Created | CleanedUp, _) => Step::Deploy { replace: changed },
        // A deploy that never finished is deployed again, from the file as
        // it now is, and so is a cluster whose cleanup stopped half-way
        // while its file is still there.
        (Failed, None | Some(Deploying | CleaningUp)) => Step::Deploy { replace: changed },
        // The stored file already says what a failed join, delete or
        // upgrade was to make of the cluster, so it cannot tell that the
        // cluster is not there: the run is tried again as it was.
        (Failed, Some(Upgrading)) => Step::Upgrade,
        (Failed, Some(RemovingNodes)) if !current.scope.is_empty() => {
            Step::Delete(current.scope.clone())
        }
        (Failed, Some(Joining)) if !current.scope.is_empty() => {
            let rejoin = |hosts: &[HostConfig]| -> Vec<HostConfig> {
                hosts
                    .iter()
                    .filter(|host| current.scope.contains(&host.name))
                    .cloned()
                    .collect()
            };
            let join = JoinFile {
                masters: rejoin(&desired.masters),
                workers: rejoin(&desired.workers),
            };
            if join.masters.is_empty() && join.workers.is_empty() {
                // The file no longer wants them: they leave instead.
                toward(&current.config, desired, changed)
            } else {
                Step::Join(join)
            }
        }
        _ => toward(&current.config, desired, changed),
    };
    match step {
        // Whatever failed, a failed cluster is not where its file says.
        Step::Reached if current.state == Failed => Step::Deploy { replace: false },
        step => step,
    }
}

/// The membership change (or upgrade) a deployed cluster needs.
fn toward(current: &DeployConfig, desired: &DeployConfig, changed: bool) -> Step {
    let have = machine_names(current);
    let want = machine_names(desired);
    let leaving: Vec<String> = have.iter().filter(|n| !want.contains(n)).cloned().collect();
    if !leaving.is_empty() {
        return Step::Delete(leaving);
    }
    let new = |hosts: &[HostConfig]| -> Vec<HostConfig> {
        hosts
            .iter()
            .filter(|host| !have.contains(&host.name))
            .cloned()
            .collect()
    };
    let join = JoinFile {
        masters: new(&desired.masters),
        workers: new(&desired.workers),
    };
    if !join.masters.is_empty() || !join.workers.is_empty() {
        return Step::Join(join);
    }
    if changed {
        Step::Upgrade
    } else {
        Step::Reached
    }
}

/// Every machine the file names, once.
fn machine_names(config: &DeployConfig) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let hosts = config
        .masters
        .iter()
        .chain(&config.workers)
        .chain(&config.etcds);
    for host in hosts {
        if !names.contains(&host.name) {
            names.push(host.name.clone());
        }
    }
    names
}

/// The file with its defaults filled and its machine lists in name order:
/// a join appends to the lists, so the stored file and the repository's
/// may list the same machines in another order.
fn normalised(config: &DeployConfig) -> DeployConfig {
    let mut config = config.with_defaults();
    for hosts in [&mut config.masters, &mut config.workers, &mut config.etcds] {
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(workers: &[&str], archive: &str) -> DeployConfig {
        // Each machine's address is its own, wherever it is listed.
        let workers: String = workers
            .iter()
            .map(|name| format!("- name: {name}\n  ip: 192.0.2.2{}\n", &name[1..]))
            .collect();
        let text = format!(
            "cluster-id: c1\nusername: root\npassword: x\nmasters:\n- name: m1\n  ip: 192.0.2.10\n\
             workers:\n{workers}install:\n  package-source:\n    srcpath:\n      amd64: {archive}\n"
        );
        wasmco_core::eggo::parse(&text).expect("a deploy file")
    }

    fn at(
        state: ClusterDeploymentState,
        run: Option<ClusterDeploymentState>,
        config: DeployConfig,
    ) -> Current {
        Current {
            state,
            run,
            scope: Vec::new(),
            config,
        }
    }

    use ClusterDeploymentState::*;

    #[test]
    fn a_new_file_is_created_and_a_deployed_one_at_its_file_is_reached() {
        let desired = file(&["w1"], "/a.tgz");
        assert_eq!(next_step(None, &desired), Step::Create);
        let deployed = at(Deployed, Some(Deploying), desired.clone());
        assert_eq!(next_step(Some(&deployed), &desired), Step::Reached);
        for running in [Deploying, Joining, RemovingNodes, Upgrading, CleaningUp] {
            let current = at(running, Some(running), file(&[], "/a.tgz"));
            assert_eq!(next_step(Some(&current), &desired), Step::Wait, "{running}");
        }
    }

    #[test]
    fn machines_leave_before_others_join_and_the_rest_is_an_upgrade() {
        let current = at(Deployed, Some(Deploying), file(&["w1", "w2"], "/a.tgz"));
        let swapped = file(&["w2", "w3"], "/b.tgz");
        assert_eq!(
            next_step(Some(&current), &swapped),
            Step::Delete(vec!["w1".into()])
        );
        let after_delete = at(Deployed, Some(RemovingNodes), file(&["w2"], "/a.tgz"));
        let Step::Join(join) = next_step(Some(&after_delete), &swapped) else {
            panic!("a join");
        };
        assert_eq!(join.names(), vec!["w3".to_owned()]);
        assert!(join.masters.is_empty());
        // Joined, the stored file lists the machines in its own order.
        let joined = at(Deployed, Some(Joining), file(&["w3", "w2"], "/a.tgz"));
        assert_eq!(next_step(Some(&joined), &swapped), Step::Upgrade);
        let upgraded = at(Deployed, Some(Upgrading), file(&["w3", "w2"], "/b.tgz"));
        assert_eq!(next_step(Some(&upgraded), &swapped), Step::Reached);
    }

    #[test]
    fn a_failed_run_is_tried_again_as_it_was_never_called_reached() {
        let desired = file(&["w1", "w2"], "/b.tgz");
        let never = at(Failed, Some(Deploying), file(&["w1"], "/a.tgz"));
        assert_eq!(
            next_step(Some(&never), &desired),
            Step::Deploy { replace: true }
        );
        let same = at(Failed, None, desired.clone());
        assert_eq!(
            next_step(Some(&same), &desired),
            Step::Deploy { replace: false }
        );
        let cleaned = at(CleanedUp, Some(CleaningUp), file(&["w1"], "/a.tgz"));
        assert_eq!(
            next_step(Some(&cleaned), &desired),
            Step::Deploy { replace: true }
        );
        let half_cleaned = at(Failed, Some(CleaningUp), desired.clone());
        assert_eq!(
            next_step(Some(&half_cleaned), &desired),
            Step::Deploy { replace: false }
        );
        // The stored file is already the desired one: the run is what
        // says the cluster is not.
        let upgrade = at(Failed, Some(Upgrading), desired.clone());
        assert_eq!(next_step(Some(&upgrade), &desired), Step::Upgrade);
        let mut join = at(Failed, Some(Joining), desired.clone());
        join.scope = vec!["w2".into()];
        let Step::Join(again) = next_step(Some(&join), &desired) else {
            panic!("the join again");
        };
        assert_eq!(again.names(), vec!["w2".to_owned()]);
        // Taken out of the file meanwhile, the joiner leaves instead.
        assert_eq!(
            next_step(Some(&join), &file(&["w1"], "/b.tgz")),
            Step::Delete(vec!["w2".into()])
        );
        let mut delete = at(Failed, Some(RemovingNodes), file(&["w1"], "/b.tgz"));
        delete.scope = vec!["w3".into()];
        assert_eq!(
            next_step(Some(&delete), &desired),
            Step::Delete(vec!["w3".into()])
        );
    }
}
