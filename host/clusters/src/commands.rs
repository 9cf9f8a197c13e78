//! The commands a deploy runs on the first master and around services:
//! waits as Eggo waits (kubectl with the admin kubeconfig), the addons'
//! kubectl calls, and the start that restarts a service only when what it
//! runs with changed.

use std::time::Duration;

use wasmco_nodes::Command;

use crate::plan::{self, CONFIG_DIR, Plan, STAMPS, Step};
use crate::topology::Machine;

/// Waits on the first master until its API server is ready, as Eggo
/// waits (kubectl with the admin kubeconfig, once a second).
pub fn wait_for_api(ready_timeout: Duration) -> Step {
    let seconds = ready_timeout.as_secs();
    Step::Run(Command::new(
        "wait for the API server",
        format!(
            "export KUBECONFIG={CONFIG_DIR}/admin.conf; for i in $(seq {seconds}); do \
             kubectl get --raw /readyz >/dev/null 2>&1 && exit 0; sleep 1; done; \
             kubectl get --raw '/readyz?verbose' >&2; exit 1"
        ),
        ready_timeout + Duration::from_secs(30),
    ))
}

/// Waits on the first master until `worker`'s Node exists and is Ready.
pub fn wait_for_node(worker: &Machine, ready_timeout: Duration) -> Step {
    let seconds = ready_timeout.as_secs();
    let name = &worker.name;
    Step::Run(Command::new(
        format!("wait for node {name} to be Ready"),
        format!(
            "export KUBECONFIG={CONFIG_DIR}/admin.conf; for i in $(seq {seconds}); do \
             kubectl get node {name} >/dev/null 2>&1 && break; sleep 1; done; \
             kubectl wait --for=condition=Ready node/{name} --timeout={seconds}s"
        ),
        ready_timeout * 2 + Duration::from_secs(30),
    ))
}

/// On the first master: master-workers tainted and labelled as Eggo
/// does, the file's `yaml` packages named by URL applied, the bootstrap token
/// deleted now that every kubelet has its own certificate.
pub fn addons(plan: &Plan<'_>) -> Vec<Step> {
    let mut steps = mark_masters(plan.topology.with(|roles| roles.master && roles.worker));
    steps.extend(plan::url_addons(plan));
    steps.push(delete_bootstrap_token(plan));
    steps
}

/// Master-workers tainted and labelled as Eggo does.
pub fn mark_masters<'m>(machines: impl IntoIterator<Item = &'m Machine>) -> Vec<Step> {
    machines
        .into_iter()
        .map(|machine| {
            let name = &machine.name;
            kubectl(
                &format!("taint and label {name}"),
                &format!(
                    "taint nodes {name} node-role.kubernetes.io/master:NoSchedule --overwrite && \
                     kubectl label node {name} node-role.kubernetes.io/master= \
                     node-role.kubernetes.io/control-plane= --overwrite"
                ),
            )
        })
        .collect()
}

/// The bootstrap token deleted, once every kubelet has its own
/// certificate.
pub fn delete_bootstrap_token(plan: &Plan<'_>) -> Step {
    kubectl(
        "delete the bootstrap token",
        &format!(
            "-n kube-system delete secret bootstrap-token-{} --ignore-not-found",
            plan.material.bootstrap_token_id()
        ),
    )
}

/// On the first master: `node` cordoned and its pods evicted (DaemonSets'
/// left, emptyDir data given up) for at most `timeout`; a node whose pods
/// are not all gone by then is taken out anyway, as Eggo takes nodes out,
/// and its pods are deleted with it. Nothing when the node is gone.
pub fn drain(node: &Machine, timeout: Duration) -> Step {
    let name = &node.name;
    let seconds = timeout.as_secs().max(1);
    let cordoned = cordoned_marker(node);
    Step::Run(Command::new(
        format!("drain {name}"),
        format!(
            "export KUBECONFIG={CONFIG_DIR}/admin.conf; \
             found=$(kubectl get node {name} -o jsonpath='{{.spec.unschedulable}}' 2>&1) || \
             {{ case \"$found\" in *NotFound*) exit 0 ;; esac; echo \"$found\" >&2; exit 1; }}; \
             mkdir -p {STAMPS} && rm -f {cordoned}; \
             [ \"$found\" = true ] && touch {cordoned}; \
             kubectl cordon {name} >/dev/null && \
             {{ kubectl drain {name} --ignore-daemonsets --delete-emptydir-data --force \
             --timeout={seconds}s >/dev/null 2>&1 || \
             echo \"{name}'s pods were not all evicted within {seconds}s\" >&2; }}"
        ),
        timeout + Duration::from_secs(60),
    ))
}

/// On the first master: where [`drain`] notes that a node was cordoned
/// before it (by someone else), so [`uncordon`] leaves it so.
fn cordoned_marker(node: &Machine) -> String {
    format!("{STAMPS}/cordoned-before-drain-{}", node.name)
}

/// On the first master: `node` schedulable again, unless it was cordoned
/// before [`drain`] cordoned it.
pub fn uncordon(node: &Machine) -> Step {
    let name = &node.name;
    let cordoned = cordoned_marker(node);
    Step::Run(Command::new(
        format!("uncordon {name}"),
        format!(
            "export KUBECONFIG={CONFIG_DIR}/admin.conf; if [ -e {cordoned} ]; then rm -f {cordoned}; \
             else kubectl uncordon {name} >/dev/null; fi"
        ),
        Duration::from_secs(60),
    ))
}

/// On the first master: the Nodes of machines that left deleted.
pub fn delete_nodes<'m>(machines: impl IntoIterator<Item = &'m Machine>) -> Vec<Step> {
    machines
        .into_iter()
        .map(|machine| {
            kubectl(
                &format!("delete node {}", machine.name),
                &format!(
                    "delete node {} --ignore-not-found --wait=false",
                    machine.name
                ),
            )
        })
        .collect()
}

/// Fails naming the first of `machine`'s services that is not running,
/// with its journal's end: a service that starts and then exits (a flag
/// its version refuses) is caught here, not by the first Service that
/// does not answer.
pub fn check_services(machine: &Machine) -> Step {
    let roles = &machine.roles;
    let mut services = Vec::new();
    if roles.etcd {
        services.push("etcd");
    }
    if roles.master {
        services.extend([
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
        ]);
    }
    if roles.worker {
        services.extend(["kubelet", "kube-proxy"]);
    }
    Step::Run(Command::new(
        "check the cluster's services",
        format!(
            "for service in {}; do systemctl is-active -q $service || {{ \
             echo $service is $(systemctl is-active $service) >&2; \
             journalctl -u $service --no-pager -n 20 >&2; exit 1; }}; done",
            services.join(" ")
        ),
        Duration::from_secs(30),
    ))
}

/// Enables `service` and makes it run. It is restarted when the inputs it
/// was last restarted with (`digest`, and its program's digest) differ
/// from now, and the stamp is written only after the restart succeeded,
/// so a deploy stopped between writing a file and restarting still
/// restarts when run again; else it is started, a no-op when it runs. A
/// failure shows the end of its journal.
pub fn start(service: &str, program: Option<&str>, digest: &str) -> Command {
    let program_digest = program.map_or(String::new(), |program| {
        format!("$(sha256sum {program} 2>/dev/null | cut -c1-64)")
    });
    Command::new(
        format!("start {service}"),
        format!(
            "stamp={STAMPS}/{service}.applied; want=\"{digest}{program_digest}\"; \
             systemctl daemon-reload && systemctl enable -q {service} && \
             if [ \"$(cat $stamp 2>/dev/null)\" = \"$want\" ]; then systemctl start {service}; \
             else systemctl restart {service} && mkdir -p {STAMPS} && echo \"$want\" > $stamp; fi || \
             {{ journalctl -u {service} --no-pager -n 20 >&2; exit 1; }}"
        ),
        Duration::from_secs(120),
    )
}

/// kubectl with the first master's admin kubeconfig; exported, so a
/// second kubectl later in `arguments` (`… && kubectl label …`) has it too.
pub fn kubectl(step: &str, arguments: &str) -> Step {
    Step::Run(Command::new(
        step,
        format!("export KUBECONFIG={CONFIG_DIR}/admin.conf; kubectl {arguments}"),
        Duration::from_secs(60),
    ))
}
