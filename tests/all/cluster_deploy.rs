//! Clusters made from Eggo's deploy file through a real `wasmco serve`:
//! what the API refuses before touching a machine, and the whole path on
//! lab machines (tests/nodes/lab.sh): `wasmco cluster deploy -f`, a
//! `kill -9` of the server mid-deploy and the run resumed at its start, the
//! cluster registered under its provider, its addons (a `yaml` package,
//! CoreDNS) applied through rsync, a DIG whose busybox pods run on it and
//! resolve names through its DNS, a worker joining (`wasmco cluster
//! join`) and running one of them, leaving again drained (`wasmco cluster
//! delete`), and `wasmco cluster cleanup --force` terminating the DIG and
//! taking the cluster down.

use std::path::Path;
use std::time::Duration;

use reqwest::blocking::multipart;
use serde_json::{Value, json};

use wasmco_core::wire::{ClusterDeploymentState, ClusterDeploymentStatus, Phase};

use crate::cli::wasmco;
use crate::deploy::action;
use crate::hosts::Hosts;
use crate::store_etcd::Etcd;
use crate::support::clusters::{Deployment, all, approved_dig, composite_app_with};
use crate::support::server::{Server, doc, expect};
use crate::support::wait::eventually;

// The deploy tests' lab and deploy file, shared rather than written twice
// (it allows the helpers this binary does not need).
#[path = "../../host/clusters/tests/support/mod.rs"]
pub(crate) mod lab_support;

use lab_support::lab::Lab;
use lab_support::{deploy_file, output_of, script};

const DEPLOYMENTS: &str = "/v2/cluster-providers/eggo/cluster-deployments";

/// Uploads a deploy file (and a key) as `name` under provider `eggo`.
fn upload(
    server: &Server,
    name: &str,
    file: &str,
    key: Option<&str>,
) -> reqwest::blocking::Response {
    let mut form = multipart::Form::new()
        .text("metadata", doc(name, json!({})).to_string())
        .part(
            "file",
            multipart::Part::bytes(file.as_bytes().to_vec()).file_name("deploy.yaml"),
        );
    if let Some(key) = key {
        form = form.part(
            "privateKey",
            multipart::Part::bytes(key.as_bytes().to_vec()).file_name("id_rsa"),
        );
    }
    server
        .client
        .post(server.url(DEPLOYMENTS))
        .multipart(form)
        .send()
        .unwrap()
}

fn status(server: &Server, name: &str) -> ClusterDeploymentStatus {
    let body = expect(server.get(&format!("{DEPLOYMENTS}/{name}/status")), 200);
    serde_json::from_value(body).expect("a cluster deployment's status")
}

fn refused_field(response: reqwest::blocking::Response, status: u16) -> String {
    let body = expect(response, status);
    body["field"].as_str().unwrap_or_default().to_owned()
}

/// A deploy file for two machines at `ips` and `port`, which need not
/// exist: the API's checks come before any connection.
pub(crate) fn paper_file(archive: &Path, key: &Path, ips: [&str; 2], port: u16) -> String {
    let machine = |name: &str, ip: &str| wasmco_nodes::NodeAddress {
        name: name.into(),
        host: ip.into(),
        port,
    };
    let (master, worker) = (machine("m1", ips[0]), machine("w1", ips[1]));
    deploy_file(&[&master, &worker], &archive.display().to_string(), key)
}

/// A private key made as a user makes one, at `dir/name`.
pub(crate) fn a_key(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        // Else it makes ~/.ssh, which the lab's machines see through their
        // overlay root.
        .env("HOME", dir)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success());
    std::fs::read_to_string(path).unwrap()
}

/// A package archive holding only the `yaml` package of the lab's deploy
/// file, which is read before any machine is reached.
pub(crate) fn addon_archive(dir: &Path) -> std::path::PathBuf {
    let archive = dir.join("packages.tar.gz");
    let files = dir.join("packages/file");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::copy(script("lab-addon.yaml"), files.join("lab-addon.yaml")).unwrap();
    let packed = std::process::Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.join("packages"))
        .arg("file")
        .status()
        .expect("tar runs");
    assert!(packed.success());
    archive
}

/// A loopback port nobody listens on.
pub(crate) fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port()
}

/// Creates the deployment `nobody` under provider `eggo`, its two machines
/// loopback ports nobody listens on, and starts its deploy.
pub(crate) fn deploy_to_nobody(server: &Server, dir: &Path) -> String {
    let archive = addon_archive(dir);
    let file = paper_file(
        &archive,
        &dir.join("id_rsa"),
        ["127.0.0.1", "127.0.0.2"],
        closed_port(),
    );
    let key = a_key(dir, "nobody_key");
    expect(upload(server, "nobody", &file, Some(&key)), 201);
    expect(
        server.post(&format!("{DEPLOYMENTS}/nobody/deploy"), Value::Null),
        202,
    );
    "nobody".to_owned()
}

#[test]
fn the_api_refuses_a_deploy_file_by_field_and_keeps_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    expect(
        server.post("/v2/cluster-providers", doc("eggo", json!({}))),
        201,
    );
    let archive = data.path().join("packages.tar.gz");
    std::fs::write(&archive, b"not read before a deploy").unwrap();
    let key_path = data.path().join("id_rsa");
    let file = paper_file(&archive, &key_path, ["192.0.2.10", "192.0.2.11"], 22);

    let docker = file.replace("runtime: containerd", "runtime: docker");
    assert_eq!(
        refused_field(upload(&server, "c1", &docker, Some("key")), 422),
        "file.runtime"
    );
    assert_eq!(
        refused_field(upload(&server, "c1", &file, None), 422),
        "privateKey",
        "the server reads no key from its own disk"
    );
    let elsewhere = file.replace(
        &archive.display().to_string(),
        "/nonexistent/packages.tar.gz",
    );
    assert_eq!(
        refused_field(upload(&server, "c1", &elsewhere, Some("key")), 422),
        "file.install.package-source.srcpath.amd64"
    );
    assert_eq!(
        refused_field(upload(&server, "c1", "cluster-id: [", Some("key")), 422),
        "file.cluster-id"
    );
    assert_eq!(
        refused_field(upload(&server, "c1", &file, Some("not a key")), 422),
        "privateKey"
    );
    expect(server.get(&format!("{DEPLOYMENTS}/c1")), 404);
    expect(
        server.post(&format!("{DEPLOYMENTS}/c1/deploy"), Value::Null),
        404,
    );

    // Accepted, it shows what it lays out and never the key.
    let key = a_key(data.path(), "c1_key");
    let body = expect(upload(&server, "c1", &file, Some(&key)), 201);
    assert_eq!(body["status"]["masters"], json!(["m1"]));
    assert_eq!(body["status"]["workers"], json!(["w1"]));
    let stored = expect(server.get(&format!("{DEPLOYMENTS}/c1")), 200);
    let key_body = key.lines().nth(1).unwrap();
    assert!(!stored.to_string().contains(key_body), "{stored}");
    assert_eq!(status(&server, "c1").state, ClusterDeploymentState::Created);

    // Machines join, leave or upgrade only a cluster that is there; a body
    // that is not the action's is refused by field first.
    let act = |action: &str, body: Value| server.post(&format!("{DEPLOYMENTS}/c1/{action}"), body);
    let worker = json!({"workers": [{"name": "w2", "ip": "192.0.2.12", "port": 22}]});
    for (action, body) in [
        ("join", worker.clone()),
        ("delete", json!({"nodes": ["w1"]})),
        ("upgrade", Value::Null),
    ] {
        let refused = expect(act(action, body), 409);
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("not deployed"),
            "{refused}"
        );
    }
    assert!(
        refused_field(
            act("join", json!({"workers": [{"name": "w2", "address": "x"}]})),
            400
        )
        .starts_with("workers[0]")
    );
    assert_eq!(
        refused_field(act("delete", json!({"nodes": "w1"})), 400),
        "nodes"
    );
    assert_eq!(
        refused_field(act("cleanup", json!({"force": "yes"})), 400),
        "force"
    );
    assert_eq!(status(&server, "c1").state, ClusterDeploymentState::Created);
    let unchanged = expect(server.get(&format!("{DEPLOYMENTS}/c1")), 200);
    assert_eq!(unchanged["status"]["workers"], json!(["w1"]));

    // Machines nobody answers on: the run fails naming the machine and the
    // phase, and no cluster is registered.
    let nobody = deploy_to_nobody(&server, data.path());
    let failed = eventually("the deploy to fail", Duration::from_secs(60), || {
        let now = status(&server, &nobody);
        match now.state {
            ClusterDeploymentState::Failed => Ok(now),
            _ => Err(format!("{now:?}")),
        }
    });
    let error = failed.progress.error.clone().unwrap_or_default();
    assert!(error.starts_with("infrastructure: "), "{error}");
    assert!(
        error.contains("node m1") || error.contains("node w1"),
        "{error}"
    );
    assert!(failed.ended.is_some(), "{failed:?}");
    expect(
        server.get(&format!("/v2/cluster-providers/eggo/clusters/{nobody}")),
        404,
    );
}

#[test]
fn a_deploy_file_makes_a_cluster_through_the_cli_and_a_dig_runs_pods_on_it() {
    // Built (when not cached) before this thread enters the lab's network,
    // which reaches no module proxy.
    let archive = output_of(&script("package.sh"));
    let lab = Lab::up(3);
    let data = tempfile::tempdir().unwrap();
    let args = ["--resync-interval", "1s", "--probe-interval", "1s"];
    // Started after `Lab::up`, the server and the CLI live in the lab's network.
    let mut server = Server::start_with(data.path(), &args);
    // The third machine joins later.
    let machines: Vec<&wasmco_nodes::NodeAddress> = lab.nodes[..2].iter().collect();
    let file = data.path().join("deploy.yaml");
    std::fs::write(&file, deploy_file(&machines, &archive, &lab.file("id_rsa"))).unwrap();
    let file = file.display().to_string();
    let cli = |server: &Server, args: &[&str]| {
        wasmco(&[&["--server", &server.base, "--token", &server.token], args].concat())
    };

    let started = cli(
        &server,
        &[
            "cluster",
            "deploy",
            "-f",
            &file,
            "--label",
            "made",
            "--no-wait",
        ],
    );
    assert!(started.status.success(), "{started:?}");
    // While it runs, the file it reads can be neither changed nor dropped.
    let item = format!("{DEPLOYMENTS}/lab-cluster");
    expect(server.delete(&item), 409);
    expect(
        server.put_metadata(&item, doc("lab-cluster", json!({"labels": ["other"]}))),
        409,
    );
    // Killed once the etcd phase is done somewhere, the server resumes the
    // run when it starts again.
    eventually("the etcd phase", Duration::from_secs(300), || {
        let now = status(&server, "lab-cluster");
        let etcd_done = now
            .progress
            .nodes
            .values()
            .any(|node| node.done.contains(&Phase::Etcd));
        if etcd_done {
            Ok(())
        } else {
            Err(format!("{:?}", now.progress))
        }
    });
    server.sigkill();
    server = Server::start_with(data.path(), &args);
    let followed = cli(&server, &["cluster", "status", "lab-cluster", "-w"]);
    assert!(
        followed.status.success(),
        "{}",
        String::from_utf8_lossy(&followed.stderr)
    );
    let done = status(&server, "lab-cluster");
    assert_eq!(done.state, ClusterDeploymentState::Deployed, "{done:?}");
    assert!(done.progress.finished);
    // The `yaml` package (a Namespace and a ConfigMap) and CoreDNS's six
    // objects went through rsync, which the deploy waited for; CoreDNS's
    // pods become ready, which needs the cluster's Service routing too.
    let addons = done
        .addons
        .clone()
        .expect("the addons were handed to rsync");
    assert_eq!((addons.objects, addons.applied), (8, 8), "{addons:?}");
    eventually("CoreDNS ready", Duration::from_secs(180), || {
        let addons = status(&server, "lab-cluster").addons.unwrap_or_default();
        if addons.ready == addons.objects {
            Ok(())
        } else {
            Err(format!("{addons:?}"))
        }
    });

    let cluster = expect(
        server.get("/v2/cluster-providers/eggo/clusters/lab-cluster"),
        200,
    );
    let reached = cluster["status"]["kubeconfig"]["server"]
        .as_str()
        .unwrap_or_default();
    assert!(reached.contains(&lab.nodes[0].host), "{cluster}");
    let labels = expect(
        server.get("/v2/cluster-providers/eggo/clusters/lab-cluster/labels"),
        200,
    );
    assert!(labels.to_string().contains("made"), "{labels}");

    // The same file again changes nothing: the run ends as it did.
    let again = cli(
        &server,
        &["cluster", "deploy", "-f", &file, "--label", "made"],
    );
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        status(&server, "lab-cluster").state,
        ClusterDeploymentState::Deployed
    );

    // A worker joins as `eggo join` joins one; the DIG's two pods, spread
    // over the workers, need it.
    let joiner = &lab.nodes[2];
    let port = joiner.port.to_string();
    let joined = cli(
        &server,
        &[
            "cluster",
            "join",
            "--id",
            "lab-cluster",
            "--name",
            &joiner.name,
            "--port",
            &port,
            &joiner.host,
        ],
    );
    assert!(
        joined.status.success(),
        "{}",
        String::from_utf8_lossy(&joined.stderr)
    );
    let grown = status(&server, "lab-cluster");
    assert_eq!(grown.state, ClusterDeploymentState::Deployed, "{grown:?}");
    let stored = expect(server.get(&item), 200);
    assert_eq!(
        stored["status"]["workers"],
        json!(["node2", "node3"]),
        "{stored}"
    );
    // Joining what is there already is refused by field, and nothing runs.
    let taken = server.post(
        &format!("{item}/join"),
        json!({"workers": [{"name": "node9", "ip": lab.nodes[1].host, "port": 22}]}),
    );
    assert!(refused_field(taken, 422).starts_with("workers[0]"));

    let dig = place_busybox_by_label(&server);
    eventually("the busybox pods", Duration::from_secs(240), || {
        let rows = Deployment::rows_of(&server, &dig);
        if all(&rows, "Applied", "Ready") {
            return Ok(());
        }
        Err(rows
            .iter()
            .map(|row| row.detail.to_string())
            .collect::<Vec<_>>()
            .join("\n"))
    });

    let on_nodes = || {
        lab_support::runtime().block_on(lab_support::on_master(
            &lab,
            "kubectl get pods -l app=sleeper --field-selector=status.phase=Running \
             -o jsonpath='{range .items[*]}{.spec.nodeName} {end}'",
        ))
    };
    let placed = on_nodes();
    assert!(
        placed.contains("node2") && placed.contains("node3"),
        "{placed}"
    );

    // The worker leaves drained: its pod comes back on node2 and is Ready.
    let first = cli(
        &server,
        &["cluster", "delete", "--id", "lab-cluster", "node1"],
    );
    assert!(!first.status.success());
    assert!(String::from_utf8_lossy(&first.stderr).contains("first master"));
    let left = cli(
        &server,
        &["cluster", "delete", "--id", "lab-cluster", "node3"],
    );
    assert!(
        left.status.success(),
        "{}",
        String::from_utf8_lossy(&left.stderr)
    );
    let stored = expect(server.get(&item), 200);
    assert_eq!(stored["status"]["workers"], json!(["node2"]), "{stored}");
    eventually(
        "the sleeper back on node2",
        Duration::from_secs(180),
        || {
            let placed = on_nodes();
            let rows = Deployment::rows_of(&server, &dig);
            if placed.split_whitespace().collect::<Vec<_>>() == ["node2", "node2"]
                && all(&rows, "Applied", "Ready")
            {
                Ok(())
            } else {
                Err(format!("{placed}: {rows:?}"))
            }
        },
    );

    // Cleanup refuses while the DIG is there, unless forced: then the DIG
    // is terminated first and its pods are gone before any machine is.
    let refused = cli(&server, &["cluster", "cleanup", "lab-cluster"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("terminate it") && said.contains("/ca/") && said.contains("force"),
        "{said}"
    );
    let cleaned = cli(
        &server,
        &["cluster", "cleanup", "--id", "lab-cluster", "--force"],
    );
    assert!(
        cleaned.status.success(),
        "{}",
        String::from_utf8_lossy(&cleaned.stderr)
    );
    let rows = Deployment::rows_of(&server, &dig);
    assert!(rows.iter().all(|row| row.deployed == "Deleted"), "{rows:?}");
    let after = status(&server, "lab-cluster");
    assert_eq!(after.state, ClusterDeploymentState::CleanedUp, "{after:?}");
    assert_eq!(after.addons, None);
    expect(
        server.get("/v2/cluster-providers/eggo/clusters/lab-cluster"),
        404,
    );
}

/// Two hosts on one etcd. The one running a deploy is killed once its etcd
/// phase is done; the other, up all along, takes the run up when the dead
/// host's lease (3 s) has run out, without any host starting, and
/// finishes it.
#[test]
fn a_deploy_whose_host_dies_is_finished_by_a_host_still_up() {
    let archive = output_of(&script("package.sh"));
    let lab = Lab::up(2);
    // Started in the lab's network, where the machines are.
    let etcd = Etcd::start();
    let mut hosts = Hosts::start(&etcd, 2, &["--probe-interval", "1s"]);
    let machines: Vec<&wasmco_nodes::NodeAddress> = lab.nodes.iter().collect();
    let file = deploy_file(&machines, &archive, &lab.file("id_rsa"));
    let key = std::fs::read_to_string(lab.file("id_rsa")).unwrap();
    let first = hosts.host(0);
    expect(
        first.post("/v2/cluster-providers", doc("eggo", json!({}))),
        201,
    );
    expect(upload(first, "lab-cluster", &file, Some(&key)), 201);
    expect(
        first.post(&format!("{DEPLOYMENTS}/lab-cluster/deploy"), Value::Null),
        202,
    );
    let other = hosts.host(1);
    eventually("the etcd phase", Duration::from_secs(300), || {
        let now = status(other, "lab-cluster");
        let etcd_done = now
            .progress
            .nodes
            .values()
            .any(|node| node.done.contains(&Phase::Etcd));
        match (etcd_done, now.host.as_deref()) {
            (true, Some("host-0")) => Ok(()),
            _ => Err(format!("{now:?}")),
        }
    });
    hosts.servers[0].take().unwrap().kill();
    let survivor = hosts.host(1);
    let done = eventually(
        "the survivor to finish it",
        Duration::from_secs(300),
        || {
            let now = status(survivor, "lab-cluster");
            match now.state {
                ClusterDeploymentState::Deployed => Ok(now),
                ClusterDeploymentState::Failed => panic!("the run failed: {now:?}"),
                _ => Err(format!("{now:?}")),
            }
        },
    );
    assert_eq!(done.host.as_deref(), Some("host-1"), "{done:?}");
    expect(
        survivor.get("/v2/cluster-providers/eggo/clusters/lab-cluster"),
        200,
    );
}

/// A DIG whose one app, a busybox Deployment of the lab's local image
/// whose pods are ready when the cluster's DNS names the API's Service, is
/// placed on the clusters of provider `eggo` labelled `made`; instantiated.
fn place_busybox_by_label(server: &Server) -> String {
    let sleeper = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: sleeper, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: sleeper}}
  template:
    metadata: {labels: {app: sleeper}}
    spec:
      # One on each worker; a cordoned worker is no longer one.
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        nodeTaintsPolicy: Honor
        labelSelector: {matchLabels: {app: sleeper}}
      terminationGracePeriodSeconds: 1
      containers:
      - name: sleeper
        image: "localhost/busybox:local"
        imagePullPolicy: Never
        command: [sleep, "3600"]
        # Ready once the cluster's DNS answers for the API's Service.
        readinessProbe:
          exec: {command: [nslookup, kubernetes.default.svc.cluster.local]}
          periodSeconds: 2
"#;
    let ca = composite_app_with(server, "p", "ca", &[("sleeper", sleeper.to_owned())]);
    let made = json!({"allOf": [{"clusterProvider": "eggo", "clusterLabel": "made"}]});
    let dig = approved_dig(server, &ca, &[("sleeper", made)]);
    expect(action(server, &dig, "instantiate"), 202);
    dig
}
