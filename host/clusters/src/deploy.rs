//! Running a deploy: one SSH session per machine, the phases in Eggo's
//! order, machines of a phase side by side (a bounded number at once),
//! progress reported after every step.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmco_core::eggo::{DeployConfig, Schedule};
use wasmco_nodes::{Login, NodeError, NodeSession, SessionSettings, on_each};

use crate::commands;
use crate::error::DeployError;
use crate::material::ClusterMaterial;
use crate::plan::{self, Archive, Plan, Step};
use crate::topology::{Machine, Topology};
use wasmco_core::wire::{DeployProgress, NodeProgress, Phase};

/// Each machine's session, by node name.
pub(crate) type Sessions = BTreeMap<String, NodeSession>;

/// Ends every session.
pub(crate) async fn close(sessions: Sessions) {
    for (_, session) in sessions {
        session.close().await;
    }
}

/// Where the bootstrap objects (the token among them) are written on the
/// first master, just long enough to be applied.
const BOOTSTRAP_MANIFEST: &str = "/etc/kubernetes/wasmco-bootstrap.yaml";

/// On the first master: the objects kubelets bootstrap with (the token
/// among them) applied, the file gone again.
pub(crate) fn bootstrap_objects(plan: &Plan<'_>) -> Vec<Step> {
    vec![
        Step::Put(wasmco_nodes::FileCopy {
            path: BOOTSTRAP_MANIFEST.into(),
            contents: plan::bootstrap_rbac(plan).into_bytes(),
            mode: 0o600,
        }),
        // The token lapses within the hour should the run stop before it
        // deletes it (the cluster's token cleaner removes it then).
        commands::kubectl(
            "apply the bootstrap objects",
            &format!(
                "apply -f {BOOTSTRAP_MANIFEST} && rm -f {BOOTSTRAP_MANIFEST} && \
                 kubectl -n kube-system patch secret bootstrap-token-{id} --type merge -p \
                 \"{{\\\"stringData\\\":{{\\\"expiration\\\":\\\"$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)\\\"}}}}\" >/dev/null",
                id = plan.material.bootstrap_token_id()
            ),
        ),
    ]
}

/// What a deploy works from.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// The deploy file, defaults filled in.
    pub config: DeployConfig,
    /// Its machines.
    pub topology: Topology,
    /// The cluster's keys and tokens (kept by the caller).
    pub material: ClusterMaterial,
    /// The login on every machine.
    pub login: Login,
    /// The package archive per architecture, if the file has one.
    pub archives: BTreeMap<String, Archive>,
}

impl Deployment {
    /// What the phases render their steps from.
    pub fn plan(&self) -> Plan<'_> {
        Plan {
            config: &self.config,
            topology: &self.topology,
            material: &self.material,
        }
    }

    /// `admin.kubeconfig` for wasmco's side: the cluster's endpoint, its CA,
    /// the `kubernetes-admin` certificate (`system:masters`). What the
    /// cluster is registered with once it is up.
    pub fn admin_kubeconfig(&self) -> String {
        wasmco_pki::kubeconfig(
            &self.topology.cluster,
            &format!("https://{}", self.topology.endpoint),
            &self.material.pki.ca.certificate,
            "kubernetes-admin",
            &self.material.admin,
        )
    }
}

/// How a deploy goes about it.
#[derive(Debug, Clone)]
pub struct DeploySettings {
    /// SSH patience.
    pub session: SessionSettings,
    /// Machines worked on at once.
    pub parallel: usize,
    /// How long the API server and each Node get to become ready.
    pub ready_timeout: Duration,
    /// How long a leaving node's pods get to be evicted before the node
    /// is taken out anyway.
    pub drain_timeout: Duration,
    /// Where the package archive is kept cut to each role's members (a
    /// directory only this user writes); without one, every machine is
    /// sent the whole archive.
    pub package_cache: Option<PathBuf>,
}

impl Default for DeploySettings {
    fn default() -> Self {
        Self {
            session: SessionSettings::default(),
            parallel: 8,
            ready_timeout: Duration::from_secs(180),
            drain_timeout: Duration::from_secs(120),
            package_cache: crate::trim::default_cache(),
        }
    }
}

/// Called with the whole state after every change, to keep and show it.
pub type Report = Arc<dyn Fn(&DeployProgress) + Send + Sync>;

/// Deploys the cluster, from `state` (a new one, or the one a stopped
/// deploy left). Returns the final state; on error the state reported last
/// says where it stopped.
pub async fn deploy(
    deployment: &Deployment,
    settings: &DeploySettings,
    state: DeployProgress,
    report: Report,
) -> Result<DeployProgress, DeployError> {
    // The file is checked here too, not only by the caller: node names and
    // package names go into commands, and Eggo's rules are what make them
    // safe there.
    let mut problems = deployment.config.check();
    problems.extend(crate::refusals::refusals(&deployment.config));
    if !problems.is_empty() {
        return Err(DeployError::Refused(problems));
    }
    let plan = deployment.plan();
    let cache = settings.package_cache.clone();
    let archives = crate::trim::machines_archives(&plan, &deployment.archives, cache).await?;
    let run = Run::new(deployment, settings, archives, state, report);
    let outcome = run.phases().await;
    run.finish(outcome.as_ref().err());
    outcome.map(|()| run.snapshot())
}

/// One run over a deployment's machines (a deploy, a cleanup), keeping
/// and reporting each machine's progress.
pub(crate) struct Run<'a> {
    pub(crate) deployment: &'a Deployment,
    pub(crate) settings: &'a DeploySettings,
    /// The package archive each machine is sent.
    archives: BTreeMap<String, Archive>,
    state: Mutex<DeployProgress>,
    report: Report,
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        deployment: &'a Deployment,
        settings: &'a DeploySettings,
        archives: BTreeMap<String, Archive>,
        state: DeployProgress,
        report: Report,
    ) -> Self {
        Run {
            deployment,
            settings,
            archives,
            state: Mutex::new(state),
            report,
        }
    }

    pub(crate) fn plan(&self) -> Plan<'_> {
        self.deployment.plan()
    }

    /// The package archive `machine` is sent, if the file has one.
    pub(crate) fn archive_of(&self, machine: &str) -> Option<&Archive> {
        self.archives.get(machine)
    }

    async fn phases(&self) -> Result<(), DeployError> {
        let sessions = self.connect_all(Phase::Infrastructure).await?;
        // Refused before anything was touched; checked again here so a
        // caller that skipped the refusals gets an error, not a panic.
        let Some(first) = self.deployment.topology.first_master() else {
            return Err(DeployError::Refused(crate::refusals::refusals(
                &self.deployment.config,
            )));
        };
        // Two paths side by side, as Eggo queues each machine's tasks: the
        // control plane's machines make etcd and the API servers while the
        // workers get their runtime and network, which needs no cluster.
        // The first failure stops the other path too.
        tokio::try_join!(
            self.control_path(&sessions, first),
            self.worker_path(&sessions)
        )?;
        self.join_and_finish(&sessions, first).await?;
        close(sessions).await;
        Ok(())
    }

    /// Infrastructure and prejoin hooks on the masters and etcd machines,
    /// then etcd; the first master alone until its API server answers, the
    /// cluster-wide objects, then the other masters.
    async fn control_path(&self, sessions: &Sessions, first: &Machine) -> Result<(), DeployError> {
        let plan = self.plan();
        let topology = &self.deployment.topology;
        let machines = topology.with(|roles| roles.master || roles.etcd);
        self.machines_up(sessions, machines.collect()).await?;
        self.on_machines(
            Phase::Etcd,
            topology.with(|roles| roles.etcd),
            sessions,
            |machine| plan::etcd(&plan, machine),
        )
        .await?;
        self.on_machines(Phase::ControlPlane, [first], sessions, |machine| {
            let mut steps = plan::control_plane(&plan, machine);
            steps.push(commands::wait_for_api(self.settings.ready_timeout));
            steps.extend(bootstrap_objects(&plan));
            steps
        })
        .await?;
        let others = topology
            .with(|roles| roles.master)
            .filter(|machine| machine.name != first.name);
        self.on_machines(Phase::ControlPlane, others, sessions, |machine| {
            plan::control_plane(&plan, machine)
        })
        .await
    }

    /// Infrastructure and prejoin hooks on the other machines (workers),
    /// then everything a worker needs before its kubelet starts.
    async fn worker_path(&self, sessions: &Sessions) -> Result<(), DeployError> {
        let plan = self.plan();
        let topology = &self.deployment.topology;
        // Only machines with no part in the control plane: a master or etcd
        // machine that also runs pods gets its runtime after the control
        // path has set it up (join_and_finish), never while it does.
        let machines: Vec<&Machine> = topology
            .with(|roles| !roles.master && !roles.etcd)
            .collect();
        self.machines_up(sessions, machines.clone()).await?;
        self.on_machines(Phase::Bootstrap, machines, sessions, |machine| {
            plan::worker_prepare(&plan, machine)
        })
        .await
    }

    /// Infrastructure, then prejoin hooks, on `machines`.
    pub(crate) async fn machines_up(
        &self,
        sessions: &Sessions,
        machines: Vec<&Machine>,
    ) -> Result<(), DeployError> {
        let plan = self.plan();
        self.on_machines(
            Phase::Infrastructure,
            machines.iter().copied(),
            sessions,
            |machine| plan::infrastructure(&plan, machine, self.archive_of(&machine.name)),
        )
        .await?;
        self.on_machines(
            Phase::Prejoin,
            machines.iter().copied(),
            sessions,
            |machine| plan::hooks(&plan, machine, Schedule::Prejoin),
        )
        .await
    }

    /// The kubelets, until their Nodes are Ready; then addons, and postjoin
    /// hooks everywhere with each machine's services checked, as Eggo
    /// checks them after its hooks.
    async fn join_and_finish(
        &self,
        sessions: &Sessions,
        first: &Machine,
    ) -> Result<(), DeployError> {
        let topology = &self.deployment.topology;
        let plan = self.plan();
        let workers: Vec<&Machine> = topology.with(|roles| roles.worker).collect();
        self.on_machines(
            Phase::Bootstrap,
            workers.iter().copied(),
            sessions,
            |machine| plan::worker_start(&plan, machine),
        )
        .await?;
        self.on_machines(Phase::Bootstrap, [first], sessions, |_| {
            workers
                .iter()
                .map(|worker| commands::wait_for_node(worker, self.settings.ready_timeout))
                .collect()
        })
        .await?;
        self.on_machines(Phase::Addons, [first], sessions, |_| {
            commands::addons(&self.plan())
        })
        .await?;
        self.on_machines(
            Phase::Postjoin,
            topology.machines.iter(),
            sessions,
            |machine| {
                let mut steps = plan::hooks(&plan, machine, Schedule::Postjoin);
                steps.push(commands::check_services(machine));
                steps
            },
        )
        .await
    }

    /// Runs each machine's steps for `phase`, machines side by side.
    pub(crate) async fn on_machines<'m, F>(
        &self,
        phase: Phase,
        machines: impl IntoIterator<Item = &'m Machine>,
        sessions: &Sessions,
        steps: F,
    ) -> Result<(), DeployError>
    where
        F: Fn(&Machine) -> Vec<Step>,
    {
        self.with_state(|state| state.phase = Some(phase));
        let work: Vec<(&Machine, Vec<Step>)> = machines
            .into_iter()
            .map(|machine| (machine, steps(machine)))
            .collect();
        let outcomes = on_each(
            work,
            self.settings.parallel,
            |(machine, steps)| async move {
                let session = &sessions[&machine.name];
                let outcome = self.apply(phase, session, steps).await;
                self.update(&machine.name, |progress| {
                    progress.step = None;
                    match &outcome {
                        Ok(()) => {
                            if !progress.done.contains(&phase) {
                                progress.done.push(phase);
                            }
                            progress.error = None;
                        }
                        Err(error) => progress.error = Some(error.to_string()),
                    }
                });
                outcome
            },
        )
        .await;
        outcomes
            .into_iter()
            .collect::<Result<(), NodeError>>()
            .map_err(|error| DeployError::Node { phase, error })
    }

    /// Runs steps in order on one machine. Every file put and archive
    /// uploaded is folded into a digest; a service's digest when it is
    /// started is what decides, on the machine, whether it restarts (see
    /// [`start`]).
    async fn apply(
        &self,
        phase: Phase,
        session: &NodeSession,
        steps: Vec<Step>,
    ) -> Result<(), NodeError> {
        let node = session.node().to_owned();
        let mut inputs = Sha256::new();
        for step in steps {
            self.update(&node, |progress| {
                progress.phase = Some(phase);
                progress.step = Some(step.name().to_owned());
            });
            match &step {
                Step::Put(file) => {
                    session.put(file).await?;
                    inputs.update(file.path.as_bytes());
                    inputs.update(file.mode.to_be_bytes());
                    inputs.update(Sha256::digest(&file.contents));
                }
                Step::Upload { local, path } => {
                    session.upload(local, path, 0o644).await?;
                    inputs.update(path.as_bytes());
                    inputs.update(local.digest.as_bytes());
                }
                Step::Run(command) => {
                    session.check(command).await?;
                }
                Step::Start { service, program } => {
                    let digest = hex::encode(inputs.clone().finalize());
                    session
                        .check(&commands::start(service, program.as_deref(), &digest))
                        .await?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn progress_of<T>(&self, node: &str, read: impl FnOnce(&NodeProgress) -> T) -> T {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        read(&state.nodes.get(node).cloned().unwrap_or_default())
    }

    pub(crate) fn update(&self, node: &str, change: impl FnOnce(&mut NodeProgress)) {
        self.with_state(|state| change(state.nodes.entry(node.to_owned()).or_default()));
    }

    pub(crate) fn with_state(&self, change: impl FnOnce(&mut DeployProgress)) {
        let snapshot = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            change(&mut state);
            state.clone()
        };
        (self.report)(&snapshot);
    }

    pub(crate) fn finish(&self, error: Option<&DeployError>) {
        self.with_state(|state| {
            state.finished = error.is_none();
            state.error = error.map(ToString::to_string);
        });
    }

    pub(crate) fn snapshot(&self) -> DeployProgress {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
