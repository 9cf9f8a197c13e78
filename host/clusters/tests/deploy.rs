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
    Archive, ClusterMaterial, DeployError, DeploySettings, DeployState, Deployment, Phase, Report,
    Topology, deploy, refusals,
};
use wasmco_core::eggo::DeployConfig;
use wasmco_nodes::{
    HostKeyPolicy, Login, NodeAddress, NodeError, NodeSession, Secret, SessionSettings,
};

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

/// The deploy file a user of Eggo would write for these machines: the
/// first is the master (and etcd), the others workers.
fn deploy_file(machines: &[&NodeAddress], archive: &str, key: &Path) -> String {
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
        master = host(machines[0]),
    )
}

/// A deployment of `lab`'s machines from the file a user would write.
fn lab_deployment(lab: &Lab, machines: &[&NodeAddress]) -> Deployment {
    let archive = output_of(&script("package.sh"));
    let text = deploy_file(machines, &archive, &lab.file("id_rsa"));
    let config = wasmco_core::eggo::parse(&text).expect("the deploy file parses");
    deployment(&config)
}

/// Keeps every state a deploy reports.
fn recorder() -> (Arc<Mutex<Vec<DeployState>>>, Report) {
    let reports = Arc::new(Mutex::new(Vec::<DeployState>::new()));
    let seen = reports.clone();
    let report: Report = Arc::new(move |state: &DeployState| {
        seen.lock().unwrap().push(state.clone());
    });
    (reports, report)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
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
    on_node(lab, 0, script).await
}

async fn on_node(lab: &Lab, node: usize, script: &str) -> String {
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

#[test]
fn an_eggo_file_deploys_a_cluster_whose_pods_run() {
    let lab = Lab::up(3);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let deployment = lab_deployment(&lab, &machines);
    let (reports, report) = recorder();
    let settings = DeploySettings::default();

    runtime().block_on(async {
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

#[test]
fn a_refused_login_or_a_missing_machine_stops_the_deploy_before_it_touches_anything() {
    let lab = Lab::up(2);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let mut deployment = lab_deployment(&lab, &machines);
    let settings = DeploySettings {
        session: SessionSettings {
            connect_timeout: Duration::from_secs(3),
            ..SessionSettings::default()
        },
        ..DeploySettings::default()
    };
    runtime().block_on(async {
        let right = deployment.login.clone();
        deployment.login.secret = Secret::Password("not the password".into());
        let (reports, report) = recorder();
        let refused = deploy(&deployment, &settings, DeployState::default(), report)
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, DeployError::Node { phase: Phase::Infrastructure, error: NodeError::LoginRefused { node, .. } } if node == "node1" || node == "node2"),
            "{refused:?}"
        );
        let last = reports.lock().unwrap().last().cloned().unwrap();
        assert!(!last.finished);
        assert!(last.error.as_deref().unwrap().starts_with("infrastructure: node node"), "{last:?}");
        assert!(last.nodes["node1"].error.is_some(), "{last:?}");

        // A worker at an address no machine answers.
        deployment.login = right;
        let mut ghost = deployment.topology.machines[1].clone();
        ghost.name = "ghost".into();
        ghost.ip = format!("{}.250", lab.nodes[0].host.rsplit_once('.').unwrap().0)
            .parse()
            .unwrap();
        deployment.topology.machines.push(ghost);
        let (_, report) = recorder();
        let missing = deploy(&deployment, &settings, DeployState::default(), report)
            .await
            .unwrap_err();
        assert!(
            matches!(&missing, DeployError::Node { phase: Phase::Infrastructure, error: NodeError::Unreachable { node, .. } } if node == "ghost"),
            "{missing:?}"
        );
        assert!(missing.is_transient());
        for node in 0..2 {
            assert_eq!(
                on_node(&lab, node, "ls /etc/kubernetes /root/.eggo 2>/dev/null | wc -l").await.trim(),
                "0",
                "nothing was put on {}",
                lab.nodes[node].name
            );
        }
    });
}

#[test]
fn a_deploy_stopped_halfway_resumes_where_it_stopped() {
    let lab = Lab::up(2);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let deployment = lab_deployment(&lab, &machines);
    let settings = DeploySettings::default();
    runtime().block_on(async {
        // Stopped (its future dropped, as when wasmco is killed) once the
        // control plane is being made.
        let (reports, report) = recorder();
        let reached = Arc::new(tokio::sync::Notify::new());
        let signal = reached.clone();
        let watching: Report = Arc::new(move |state: &DeployState| {
            report(state);
            if state.phase == Some(Phase::ControlPlane) {
                signal.notify_one();
            }
        });
        tokio::select! {
            outcome = deploy(&deployment, &settings, DeployState::default(), watching) => {
                panic!("the deploy finished before it was stopped: {outcome:?}")
            }
            () = reached.notified() => {}
        }
        let stopped = reports.lock().unwrap().last().cloned().unwrap();
        assert!(!stopped.finished);
        assert!(stopped.nodes["node1"].done.contains(&Phase::Etcd), "{stopped:?}");

        let (_, report) = recorder();
        let resumed = deploy(&deployment, &settings, stopped, report)
            .await
            .unwrap_or_else(|error| panic!("the resumed deploy failed: {error}"));
        assert!(resumed.finished);
        let ready = on_master(&lab, "kubectl get node node2 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'").await;
        assert_eq!(ready, "True");
    });
}
