//! The machine inventory (Eggops' API mode) through a real server and the
//! CLI: Eggops' own example applied unchanged with `wasmco apply -f`, and
//! clusters requested from a pool of five machines getting disjoint ones,
//! a third that cannot be satisfied waiting with the reason, and taking
//! the machine registered for it (loopback ports nobody listens on: the
//! inventory is decided before any machine is reached). On the lab's
//! machines (tests/nodes/lab.sh): a requested cluster deployed for real on
//! the machines picked, a second one waiting for its master until the
//! first is cleaned up, then deployed there, and nothing left behind.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use wasmco_core::eggo::eggops::Picked;
use wasmco_core::wire::{ClusterDeploymentState, ClusterDeploymentStatus};

use crate::cli::wasmco;
use crate::cluster_deploy::lab_support::lab::Lab;
use crate::cluster_deploy::lab_support::{self, deploy_file, output_of, script};
use crate::cluster_deploy::{addon_archive, closed_port};
use crate::support::server::{Server, expect, refused};
use crate::support::wait::eventually;

const EXAMPLE: &str = "tests/fixtures/eggo/eggops_cluster.yaml";

/// The CLI against `server`, as its admin; stdout, or a panic with stderr.
fn cli(server: &Server, args: &[&str]) -> (bool, String) {
    let base = server.url("");
    let out = wasmco(
        &[
            &[
                "--server",
                base.trim_end_matches('/'),
                "--token",
                &server.token,
            ],
            args,
        ]
        .concat(),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn status(server: &Server, provider: &str, name: &str) -> ClusterDeploymentStatus {
    let path = format!("/v2/cluster-providers/{provider}/cluster-deployments/{name}/status");
    serde_json::from_value(expect(server.get(&path), 200)).expect("a deployment's status")
}

fn settled(server: &Server, provider: &str, name: &str) -> ClusterDeploymentStatus {
    eventually(
        format!("{name}'s run to stop"),
        Duration::from_secs(60),
        || {
            let now = status(server, provider, name);
            match now.state {
                ClusterDeploymentState::Failed | ClusterDeploymentState::Deployed => Ok(now),
                _ => Err(format!("{now:?}")),
            }
        },
    )
}

#[test]
fn eggops_own_example_applies_unchanged_and_is_refused_by_what_it_names() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let (ok, out) = cli(&server, &["apply", "-f", EXAMPLE]);
    assert!(ok, "{out}");
    for made in [
        "machine-logins/secret-example",
        "machines/machine1-example",
        "machines/machine2-example",
        "infrastructures/infrastructure-example",
        "cluster-deployments/cluster-example",
    ] {
        assert!(
            out.contains(&format!("cluster-providers/eggo-system/{made}")),
            "{made}: {out}"
        );
    }
    assert!(
        out.contains("3 skipped"),
        "Namespace, volume and claim: {out}"
    );
    // The login is sealed: its body holds no password.
    let login = server.get("/v2/cluster-providers/eggo-system/machine-logins/secret-example");
    assert!(!expect(login, 200).to_string().contains("123456"));
    // Both machines call themselves machine1, and a cluster's nodes need
    // names of their own: the request waits for a worker, saying why, and
    // holds nothing.
    let waiting = eventually("the example to wait", Duration::from_secs(30), || {
        let now = status(&server, "eggo-system", "cluster-example");
        now.progress.waiting.clone().ok_or(format!("{now:?}"))
    });
    assert!(
        waiting.contains("needs 1 worker with workerRole=allow; 0 free to pick")
            && waiting.contains("machine2-example is named machine1 as machine1-example is"),
        "{waiting}"
    );
    let now = status(&server, "eggo-system", "cluster-example");
    assert_eq!(now.state, ClusterDeploymentState::Deploying);
    assert_eq!(now.machines, None);
    // Applied again, nothing is duplicated and the waiting run is left
    // alone; deleted, the request is withdrawn and everything goes.
    let (ok, out) = cli(&server, &["apply", "-f", EXAMPLE]);
    assert!(ok, "{out}");
    assert!(out.contains("is Deploying"), "{out}");
    let (ok, out) = cli(&server, &["delete", "-f", EXAMPLE]);
    assert!(ok, "{out}");
    let machines = expect(
        server.get("/v2/cluster-providers/eggo-system/machines"),
        200,
    );
    assert_eq!(machines, json!([]));
}

/// Five machines: two may be masters, three workers.
fn pool(server: &Server, provider: &str, port: u16) {
    expect(
        server.post(
            "/v2/cluster-providers",
            json!({"metadata": {"name": provider}, "spec": {}}),
        ),
        201,
    );
    for (n, role) in [
        (1, "master"),
        (2, "master"),
        (3, "worker"),
        (4, "worker"),
        (5, "worker"),
    ] {
        let ip = format!("127.0.0.{n}");
        register_machine(server, provider, &format!("m{n}"), (&ip, port), role);
    }
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
        "metadata": {"name": "root-login"},
        "stringData": {"username": "root", "password": "not-a-real-one"},
    });
    expect(
        server.upload(
            &format!("/v2/cluster-providers/{provider}/machine-logins"),
            json!({"metadata": {"name": "root-login"}, "spec": {}}),
            Some(secret.to_string().into_bytes()),
        ),
        201,
    );
}

/// Machine `name` at `ip` and `port`, labelled `role=ROLE`.
fn register_machine(
    server: &Server,
    provider: &str,
    name: &str,
    (ip, port): (&str, u16),
    role: &str,
) {
    let machine = json!({
        "metadata": {"name": name},
        "spec": {"hostname": name, "ip": ip, "port": port, "labels": {"role": role}},
    });
    expect(
        server.post(
            &format!("/v2/cluster-providers/{provider}/machines"),
            machine,
        ),
        201,
    );
}

/// A request for one master and one worker, installed from `archive`.
fn request(name: &str, archive: &Path) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"request": {
            "masterRequire": {"number": 1, "features": {"role": "master"}},
            "workerRequire": {"number": 1, "features": {"role": "worker"}},
            "machineLoginSecret": {"name": "root-login"},
            "runtime": {"runtime": "containerd"},
            "network": {"pod-cidr": "10.244.0.0/16", "pod-plugin": "bridge"},
            "deployFile": {"install": {"package-source": {
                "type": "tar.gz", "srcpath": {"amd64": archive.display().to_string()}}}},
        }},
    })
}

fn create_and_deploy(server: &Server, provider: &str, body: Value) -> String {
    let name = body["metadata"]["name"].as_str().unwrap().to_owned();
    let deployments = format!("/v2/cluster-providers/{provider}/cluster-deployments");
    expect(server.upload(&deployments, body, None), 201);
    expect(
        server.post(&format!("{deployments}/{name}/deploy"), json!({})),
        202,
    );
    name
}

fn picked(status: &ClusterDeploymentStatus) -> Picked {
    status
        .machines
        .clone()
        .unwrap_or_else(|| panic!("no machines picked: {status:?}"))
}

#[test]
fn requests_get_disjoint_machines_and_one_too_many_waits_with_the_reason() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let archive = addon_archive(data.path());
    let provider = "pool";
    pool(&server, provider, closed_port());
    let deployments = format!("/v2/cluster-providers/{provider}/cluster-deployments");

    // What the request names must be there, by field.
    let mut nameless = request("nameless", &archive);
    nameless["spec"]["request"]["machineLoginSecret"]["name"] = json!("nobody");
    refused(
        server.upload(&deployments, nameless, None),
        422,
        Some("spec.request.machineLoginSecret.name"),
        "nobody",
    );
    let mut both = request("both", &archive);
    both["spec"]["request"]["masterRequire"]["number"] = json!(0);
    refused(
        server.upload(&deployments, both, None),
        400,
        Some("spec.request.masterRequire.number"),
        "at least one master",
    );

    let a = create_and_deploy(&server, provider, request("a", &archive));
    let b = create_and_deploy(&server, provider, request("b", &archive));
    // Their machines never answer: each run fails, and keeps its machines
    // until it is cleaned up.
    let (a_is, b_is) = (
        settled(&server, provider, &a),
        settled(&server, provider, &b),
    );
    let (a_has, b_has) = (picked(&a_is), picked(&b_is));
    assert!(
        a_has
            .all()
            .all(|machine| !b_has.all().any(|other| other == machine)),
        "{a_has:?} {b_has:?}"
    );
    assert_eq!(a_has.masters.len() + b_has.masters.len(), 2);

    let c = create_and_deploy(&server, provider, request("c", &archive));
    let waiting = eventually("c to wait", Duration::from_secs(30), || {
        let now = status(&server, provider, &c);
        match &now.progress.waiting {
            Some(reason) => Ok(reason.clone()),
            None => Err(format!("{now:?}")),
        }
    });
    assert!(
        waiting.contains("needs 1 master with role=master; 0 free to pick")
            && waiting.contains("m1 is ")
            && waiting.contains("m2 is "),
        "{waiting}"
    );
    assert_eq!(
        status(&server, provider, &c).state,
        ClusterDeploymentState::Deploying
    );

    // Held machines stay: neither they nor their deployments can be
    // deleted, a held machine cannot move, and no two machines share an
    // address; a request stays a request.
    let held = &a_has.masters[0];
    let machine = format!("/v2/cluster-providers/{provider}/machines/{held}");
    refused(
        server.delete(&machine),
        409,
        None,
        &format!("cluster deployment {a}"),
    );
    let mut moved = expect(server.get(&machine), 200);
    moved["spec"]["ip"] = json!("127.0.0.9");
    refused(
        server.put(&machine, moved.clone()),
        409,
        None,
        "stay as they are",
    );
    let mut labelled = expect(server.get(&machine), 200);
    labelled["spec"]["labels"]["zone"] = json!("a");
    expect(server.put(&machine, labelled), 200);
    moved["metadata"]["name"] = json!("twin");
    moved["spec"]["ip"] = json!("127.0.0.3");
    refused(
        server.post(&format!("/v2/cluster-providers/{provider}/machines"), moved),
        422,
        Some("spec.ip"),
        "is reached at 127.0.0.3",
    );
    refused(
        server.delete(&format!("{deployments}/{a}")),
        409,
        None,
        "holds machines",
    );
    refused(
        server.upload_put(
            &format!("{deployments}/{a}"),
            json!({"metadata": {"name": a}, "spec": {}}),
            None,
        ),
        409,
        None,
        "made from a request",
    );

    // A machine registered for masters ends the wait.
    register_machine(
        &server,
        provider,
        "m6",
        ("127.0.0.6", closed_port()),
        "master",
    );
    let c_is = settled(&server, provider, &c);
    assert_eq!(picked(&c_is).masters, ["m6"]);
    assert!(c_is.progress.waiting.is_none());

    // A request no machine can meet waits until it is withdrawn, and then
    // holds nothing and may go.
    let mut big = request("big", &archive);
    big["spec"]["request"]["workerRequire"]["number"] = json!(9);
    let big = create_and_deploy(&server, provider, big);
    eventually("big to wait", Duration::from_secs(30), || {
        let now = status(&server, provider, &big);
        now.progress.waiting.clone().ok_or(format!("{now:?}"))
    });
    let withdrawn = expect(
        server.post(&format!("{deployments}/{big}/cleanup"), json!({})),
        202,
    );
    assert_eq!(withdrawn["state"], "CleanedUp");
    expect(server.delete(&format!("{deployments}/{big}")), 204);
}

/// A request for one master and one worker on the lab's machines: the
/// lab's own deploy file, less what the request makes of the machines
/// picked and the login, is its `deployFile`.
fn lab_request(name: &str, lab: &Lab, archive: &str) -> Value {
    let nodes: Vec<&wasmco_nodes::NodeAddress> = lab.nodes.iter().collect();
    let file = deploy_file(&nodes, archive, &lab.file("id_rsa"));
    let mut fragment: Value = serde_norway::from_str(&file).expect("the lab's deploy file");
    let fields = fragment.as_object_mut().expect("a mapping");
    for made in [
        "cluster-id",
        "username",
        "private-key-path",
        "masters",
        "workers",
    ] {
        fields.remove(made);
    }
    json!({
        "metadata": {"name": name},
        "spec": {"request": {
            "masterRequire": {"number": 1, "features": {"role": "master"}},
            "workerRequire": {"number": 1, "features": {"role": "worker"}},
            "machineLoginSecret": {"name": "lab-key"},
            "deployFile": fragment,
        }},
    })
}

fn deployed(server: &Server, provider: &str, name: &str) -> ClusterDeploymentStatus {
    let long = Duration::from_secs(600);
    eventually(format!("{name} deployed"), long, || {
        let now = status(server, provider, name);
        match now.state {
            ClusterDeploymentState::Deployed => Ok(now),
            ClusterDeploymentState::Failed => panic!("{name} failed: {now:?}"),
            _ => Err(format!("{now:?}")),
        }
    })
}

fn cleaned_up(server: &Server, provider: &str, name: &str) {
    let path = format!("/v2/cluster-providers/{provider}/cluster-deployments/{name}");
    expect(server.post(&format!("{path}/cleanup"), json!({})), 202);
    eventually(
        format!("{name} cleaned up"),
        Duration::from_secs(300),
        || {
            let now = status(server, provider, name);
            match now.state {
                ClusterDeploymentState::CleanedUp => Ok(()),
                ClusterDeploymentState::Failed => panic!("{name}'s cleanup failed: {now:?}"),
                _ => Err(format!("{now:?}")),
            }
        },
    );
}

#[test]
fn a_requested_cluster_is_made_on_the_machines_picked_and_gives_them_back() {
    // Built (when not cached) before this thread enters the lab's network.
    let archive = output_of(&script("package.sh"));
    let lab = Lab::up(3);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--probe-interval", "1s"]);
    let provider = "lab";
    expect(
        server.post(
            "/v2/cluster-providers",
            json!({"metadata": {"name": provider}, "spec": {}}),
        ),
        201,
    );
    for (index, node) in lab.nodes.iter().enumerate() {
        let role = if index == 0 { "master" } else { "worker" };
        register_machine(&server, provider, &node.name, (&node.host, node.port), role);
    }
    let key = std::fs::read_to_string(lab.file("id_rsa")).unwrap();
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/ssh-auth",
        "metadata": {"name": "lab-key"},
        "data": {"ssh-privatekey": base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD, key.as_bytes())},
    });
    expect(
        server.upload(
            &format!("/v2/cluster-providers/{provider}/machine-logins"),
            json!({"metadata": {"name": "lab-key"}, "spec": {}}),
            Some(secret.to_string().into_bytes()),
        ),
        201,
    );

    let first = create_and_deploy(&server, provider, lab_request("first", &lab, &archive));
    let made = deployed(&server, provider, &first);
    let first_has = picked(&made);
    assert_eq!(first_has.masters, ["node1"]);
    assert_eq!(first_has.workers, ["node2"]);
    expect(
        server.get(&format!(
            "/v2/cluster-providers/{provider}/clusters/{first}"
        )),
        200,
    );
    let on_master =
        |script: &str| lab_support::runtime().block_on(lab_support::on_master(&lab, script));
    let nodes = on_master("kubectl get nodes --no-headers");
    assert!(
        nodes.contains("node2") && nodes.contains(" Ready"),
        "{nodes}"
    );
    assert!(!nodes.contains("node3"), "{nodes}");

    // The only master is the first's: the second waits, saying so.
    let second = create_and_deploy(&server, provider, lab_request("second", &lab, &archive));
    let waiting = eventually("the second to wait", Duration::from_secs(30), || {
        let now = status(&server, provider, &second);
        now.progress.waiting.clone().ok_or(format!("{now:?}"))
    });
    assert!(
        waiting.contains("needs 1 master with role=master; 0 free to pick (node1 is first's)"),
        "{waiting}"
    );

    // Cleaned up, the first gives its machines back, and the second is
    // made on them.
    cleaned_up(&server, provider, &first);
    assert_eq!(status(&server, provider, &first).machines, None);
    let made = deployed(&server, provider, &second);
    assert_eq!(picked(&made).masters, ["node1"]);
    cleaned_up(&server, provider, &second);
    for name in [&first, &second] {
        expect(
            server.delete(&format!(
                "/v2/cluster-providers/{provider}/cluster-deployments/{name}"
            )),
            204,
        );
    }
    lab_support::runtime().block_on(lab_support::assert_nothing_left(&lab));
}
