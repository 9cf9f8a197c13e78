//! A cluster deployed from an Eggo deploy file onto real machines made on
//! this host (tests/nodes/lab.sh): etcd and the control plane on one,
//! kubelets on two, the binaries and images from a package archive as
//! Eggo ships them (tests/nodes/package.sh).

// The lab fixture the node task manager's tests use; not every helper is
// needed here.
#[allow(dead_code)]
#[path = "../../nodes/tests/lab/mod.rs"]
mod lab;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab::Lab;
use wasmco_clusters::{
    Archive, ClusterMaterial, DeploySettings, DeployState, Deployment, Phase, Topology, deploy,
    refusals,
};
use wasmco_core::eggo::DeployConfig;
use wasmco_nodes::{HostKeyPolicy, Login, NodeSession, Secret, SessionSettings};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/nodes")
        .join(name)
}

fn output_of(script: &Path) -> String {
    let ran = Command::new("bash")
        .arg(script)
        .output()
        .expect("bash runs");
    assert!(
        ran.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&ran.stderr)
    );
    String::from_utf8_lossy(&ran.stdout).trim().to_owned()
}

/// The deploy file a user of Eggo would write for these machines.
fn deploy_file(lab: &Lab, archive: &str, key: &Path) -> String {
    let [master, first, second] = [&lab.nodes[0], &lab.nodes[1], &lab.nodes[2]];
    format!(
        r#"cluster-id: lab-cluster
username: root
private-key-path: {key}
masters:
- name: {m}
  ip: {mip}
  port: 22
  arch: amd64
workers:
- name: {w1}
  ip: {w1ip}
  port: 22
  arch: amd64
- name: {w2}
  ip: {w2ip}
  port: 22
  arch: amd64
runtime: containerd
pause-image: localhost/pause:local
cni-bin-dir: /usr/lib/cni
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
  - name: etcd
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
  - name: pause.tar,busybox.tar
    type: image
"#,
        key = key.display(),
        m = master.name,
        mip = master.host,
        w1 = first.name,
        w1ip = first.host,
        w2 = second.name,
        w2ip = second.host,
    )
}

fn deployment(config: &DeployConfig) -> Deployment {
    let config = config.with_defaults();
    assert_eq!(config.check(), Vec::new(), "Eggo's own checks");
    assert_eq!(refusals(&config), Vec::new(), "wasmco's refusals");
    let topology = Topology::of(&config).expect("a topology");
    let pki = wasmco_pki::ClusterPki::create(&topology.cluster).expect("a CA");
    let material = ClusterMaterial::create(&topology, pki, &[]).expect("certificates");
    let source = config
        .install
        .package_source
        .clone()
        .expect("a package source");
    let archives = source
        .srcpath
        .iter()
        .map(|(arch, path)| {
            let local = PathBuf::from(path);
            let name = local.file_name().unwrap().to_string_lossy().into_owned();
            (arch.clone(), Archive { local, name })
        })
        .collect::<BTreeMap<_, _>>();
    let key = std::fs::read_to_string(&config.private_key_path).expect("the key file");
    Deployment {
        login: Login {
            user: config.username.clone(),
            secret: Secret::PrivateKey(key),
        },
        config,
        topology,
        material,
        archives,
    }
}

async fn on_master(lab: &Lab, script: &str) -> String {
    let session = NodeSession::connect(
        &lab.nodes[0],
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

#[test]
fn an_eggo_file_deploys_a_cluster_whose_pods_run() {
    let archive = output_of(&script("package.sh"));
    let lab = Lab::up(3);
    let key = lab.file("id_rsa");
    let text = deploy_file(&lab, &archive, &key);
    let config = wasmco_core::eggo::parse(&text).expect("the deploy file parses");
    let deployment = deployment(&config);
    let reports = Arc::new(Mutex::new(Vec::<DeployState>::new()));
    let seen = reports.clone();
    let report: wasmco_clusters::Report = Arc::new(move |state: &DeployState| {
        seen.lock().unwrap().push(state.clone());
    });
    let settings = DeploySettings::default();

    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let started = Instant::now();
            let state = deploy(&deployment, &settings, DeployState::default(), report.clone())
                .await
                .unwrap_or_else(|error| panic!("the deploy failed: {error}"));
            eprintln!("deployed in {:?}", started.elapsed());
            assert!(state.finished, "{state:?}");
            for node in &lab.nodes {
                let progress = &state.nodes[&node.name];
                assert!(progress.done.contains(&Phase::Infrastructure), "{progress:?}");
                assert!(progress.host_key.is_some());
                assert_eq!(progress.error, None);
            }
            let progressed = reports.lock().unwrap().len();
            assert!(progressed > 50, "progress was reported step by step: {progressed}");

            let nodes = on_master(&lab, "kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}'").await;
            assert_eq!(nodes.trim(), "node2=True node3=True", "{nodes}");

            // Real pods of the local busybox image on the two workers.
            let sleeper = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"sleeper"},
                "spec":{"replicas":2,"selector":{"matchLabels":{"app":"sleeper"}},
                "template":{"metadata":{"labels":{"app":"sleeper"}},"spec":{"containers":[{
                "name":"sleeper","image":"localhost/busybox:local","imagePullPolicy":"Never",
                "command":["sleep","3600"]}]}}}}"#;
            let pods = on_master(
                &lab,
                &format!(
                    "echo '{sleeper}' | kubectl apply -f - >/dev/null && \
                     kubectl rollout status deployment/sleeper --timeout=150s >/dev/null && \
                     kubectl get pods -l app=sleeper --field-selector=status.phase=Running \
                     -o jsonpath='{{range .items[*]}}{{.spec.nodeName}} {{.status.podIP}}{{\"\\n\"}}{{end}}'"
                ),
            )
            .await;
            let placed: Vec<&str> = pods.lines().filter(|line| !line.is_empty()).collect();
            assert_eq!(placed.len(), 2, "{pods}");
            for line in placed {
                assert!(line.starts_with("node2 10.244.") || line.starts_with("node3 10.244."), "{line}");
            }

            // Running the same file again changes nothing: no service restarts.
            let since = "systemctl show -p ActiveEnterTimestampMonotonic --value kube-apiserver etcd kube-controller-manager kube-scheduler";
            let before = on_master(&lab, since).await;
            let again = deploy(&deployment, &settings, state.clone(), report.clone())
                .await
                .expect("a second deploy");
            assert!(again.finished);
            assert_eq!(on_master(&lab, since).await, before, "nothing restarted");
        });
}
