//! What the deploy tests and the deploy benchmark share: the lab, the
//! package archive, and the deploy file a user of Eggo would write for the
//! lab's machines.

// Not every helper is needed by every test binary.
#![allow(dead_code)]

// The lab fixture the node task manager's tests use.
#[path = "../../../nodes/tests/lab/mod.rs"]
pub mod lab;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lab::Lab;
use wasmco_clusters::{DeployProgress, Deployment, Report, refusals};
use wasmco_core::eggo::DeployConfig;
use wasmco_nodes::{HostKeyPolicy, NodeAddress, NodeSession, Secret, SessionSettings};

pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/nodes")
        .join(name)
}

pub fn output_of(script: &Path) -> String {
    output_with(script, &[])
}

/// The version of the CoreDNS image tests/nodes/images.sh makes: the one
/// tests/coredns pins.
pub fn coredns_version() -> String {
    let go_mod = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/coredns/go.mod");
    let text = std::fs::read_to_string(&go_mod).expect("tests/coredns/go.mod");
    text.lines()
        .find_map(|line| line.strip_prefix("require github.com/coredns/coredns v"))
        .expect("tests/coredns/go.mod requires CoreDNS")
        .trim()
        .to_owned()
}

/// The deploy file a user of Eggo would write for these machines: the
/// first is the master (and etcd), the others workers. CoreDNS runs as
/// pods (Eggo's default), from the archive's image; a `yaml` package rides
/// along.
pub fn deploy_file(machines: &[&NodeAddress], archive: &str, key: &Path) -> String {
    let host = |machine: &NodeAddress| {
        format!(
            "- name: {}\n  ip: {}\n  port: {}\n  arch: amd64\n",
            machine.name, machine.host, machine.port
        )
    };
    let workers: String = machines[1..].iter().map(|machine| host(machine)).collect();
    format!(
        r#"cluster-id: lab-cluster
username: root
private-key-path: {key}
masters:
{master}workers:
{workers}runtime: containerd
pause-image: localhost/pause:local
cni-bin-dir: /usr/lib/cni
service:
  dns:
    imageversion: {coredns}
network:
  podcidr: 10.244.0.0/16
  plugin: bridge
config-extra-args:
- name: kubelet
  extra-args:
    # These machines may not lower a process's OOM score.
    --oom-score-adj: "0"
- name: kube-proxy
  extra-args:
    # conntrack's table size is the host's, not a machine's, here.
    --conntrack-max-per-core: "0"
install:
  package-source:
    type: tar.gz
    srcpath:
      amd64: {archive}
  etcd:
  - name: etcd,etcdctl
    type: bin
    dst: /usr/bin
  kubernetes-master:
  - name: kube-apiserver,kube-controller-manager,kube-scheduler,kubectl
    type: bin
    dst: /usr/bin
  kubernetes-worker:
  - name: kubelet,kube-proxy
    type: bin
    dst: /usr/bin
  image:
  - name: pause.tar,busybox.tar,coredns.tar
    type: image
  addition:
    master:
    - name: lab-addon.yaml
      type: yaml
      dst: ""
"#,
        coredns = coredns_version(),
        key = key.display(),
        master = host(machines[0]),
    )
}

/// A deployment of `lab`'s machines from the file a user would write.
pub fn lab_deployment(lab: &Lab, machines: &[&NodeAddress]) -> Deployment {
    let archive = output_of(&script("package.sh"));
    let text = deploy_file(machines, &archive, &lab.file("id_rsa"));
    let config = wasmco_core::eggo::parse(&text).expect("the deploy file parses");
    deployment(&config)
}

/// Keeps every state a deploy reports.
pub fn recorder() -> (Arc<Mutex<Vec<DeployProgress>>>, Report) {
    let reports = Arc::new(Mutex::new(Vec::<DeployProgress>::new()));
    let seen = reports.clone();
    let report: Report = Arc::new(move |state: &DeployProgress| {
        seen.lock().unwrap().push(state.clone());
    });
    (reports, report)
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

pub fn deployment(config: &DeployConfig) -> Deployment {
    assert_eq!(
        config.with_defaults().check(),
        Vec::new(),
        "Eggo's own checks"
    );
    assert_eq!(
        refusals(&config.with_defaults()),
        Vec::new(),
        "wasmco's refusals"
    );
    let key = std::fs::read_to_string(&config.private_key_path).expect("the key file");
    Deployment::prepare(config, Secret::PrivateKey(key), None).expect("a deployment")
}

pub async fn on_master(lab: &Lab, script: &str) -> String {
    on_node(lab, 0, script).await
}

pub async fn on_node(lab: &Lab, node: usize, script: &str) -> String {
    let session = NodeSession::connect(
        &lab.nodes[node],
        &lab.key_login("id_ed25519"),
        &HostKeyPolicy::FirstContact,
        &SessionSettings::default(),
    )
    .await
    .expect("a session on the master");
    let output = session
        .check(&wasmco_nodes::Command::new(
            "inspect",
            format!("export KUBECONFIG=/etc/kubernetes/admin.conf; {script}"),
            Duration::from_secs(180),
        ))
        .await
        .expect("the command succeeds");
    session.close().await;
    output.stdout
}

/// Asserts that nothing of a cluster is left on any of the lab's machines.
pub async fn assert_nothing_left(lab: &Lab) {
    for node in 0..lab.nodes.len() {
        let left = on_node(lab, node, LEFT_BEHIND).await;
        assert_eq!(left.trim(), "", "left on node{}", node + 1);
    }
}

/// What of a cluster still runs or lies on a machine, a line each. The
/// lab's `/var/lib/etcd` and `/var/lib/kubelet` are mounts: they stay,
/// emptied.
pub const LEFT_BEHIND: &str = "for service in kubelet kube-proxy containerd etcd kube-apiserver \
    kube-controller-manager kube-scheduler; do systemctl is-active -q $service && echo running $service; done; \
    pgrep -f '[c]ontainerd-shim' >/dev/null && echo running pods; \
    for path in /etc/kubernetes /var/lib/kubelet /var/lib/etcd /var/lib/cni /usr/bin/kubelet /usr/bin/etcd \
    /usr/bin/kube-apiserver /usr/lib/systemd/system/kubelet.service /etc/systemd/system/containerd.service \
    /etc/cni/net.d/10-wasmco-bridge.conflist /root/.eggo/package; do [ -e $path ] && \
    { [ ! -d $path ] || [ -n \"$(ls -A $path)\" ]; } && echo left $path: $(ls -A $path); done; true";

/// `script`'s output when run with `arguments`.
pub fn output_with(script: &Path, arguments: &[&str]) -> String {
    let ran = Command::new("bash")
        .arg(script)
        .args(arguments)
        .output()
        .expect("bash runs");
    assert!(
        ran.status.success(),
        "{} {arguments:?} failed: {}",
        script.display(),
        String::from_utf8_lossy(&ran.stderr)
    );
    String::from_utf8_lossy(&ran.stdout).trim().to_owned()
}

/// A Deployment of `replicas` busybox sleepers spread one per worker (a
/// cordoned worker no longer counts), as JSON for `kubectl apply -f -`.
pub fn spread_sleeper(replicas: u32) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"sleeper"}},
        "spec":{{"replicas":{replicas},"selector":{{"matchLabels":{{"app":"sleeper"}}}},
        "template":{{"metadata":{{"labels":{{"app":"sleeper"}}}},"spec":{{
        "topologySpreadConstraints":[{{"maxSkew":1,"topologyKey":"kubernetes.io/hostname",
        "whenUnsatisfiable":"DoNotSchedule","nodeTaintsPolicy":"Honor","labelSelector":{{"matchLabels":{{"app":"sleeper"}}}}}}],
        "terminationGracePeriodSeconds":1,"containers":[{{
        "name":"sleeper","image":"localhost/busybox:local","imagePullPolicy":"Never",
        "command":["sleep","3600"]}}]}}}}}}}}"#
    )
}
