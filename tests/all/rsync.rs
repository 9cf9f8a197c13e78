//! rsync against three virtual clusters, end to end through the REST API:
//! every placed object lands with its content and labels in the right
//! clusters and nowhere else, status reaches Ready, terminate removes it all.

use std::process::Command;
use std::time::Duration;

use reqwest::blocking::Client;
use serde_json::Value;

use crate::deploy::{DIG, action, set_up_with};
use crate::support::server::{Server, Virtual, expect};
use crate::support::wait::wait_until;

/// How long three virtual clusters may take to get where a step sends them.
const CONVERGENCE: Duration = Duration::from_secs(30);

/// A server with the shop set up on `clusters`, approved and instantiated.
fn instantiated(clusters: &[Virtual; 3]) -> (tempfile::TempDir, Server) {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up_with(&server, clusters.each_ref().map(|c| c.kubeconfig.clone()));
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);
    (data, server)
}

const WEB: &str = "/apis/apps/v1/namespaces/default/deployments/web";
const WEB_SERVICE: &str = "/api/v1/namespaces/default/services/web";
const DB: &str = "/apis/apps/v1/namespaces/default/deployments/db";

#[test]
fn instantiate_deploys_to_the_right_clusters_and_terminate_removes_it() {
    let clusters = [
        Virtual::start("c1"),
        Virtual::start("c2"),
        Virtual::start("c3"),
    ];
    let (_data, server) = instantiated(&clusters);

    let status = |query: &str| expect(server.get(&format!("{DIG}/status?{query}")), 200);
    wait_until("every resource to be ready", CONVERGENCE, || {
        status("status=ready")["readyStatus"] == "Ready"
    });
    let deployed = status("status=deployed&output=summary");
    assert_eq!(
        deployed["deployedCounts"],
        serde_json::json!({"Applied": 7})
    );
    assert!(deployed.get("apps").is_none());
    let all = status("status=deployed");
    let c2 = &all["apps"][0]["clusters"][0];
    assert_eq!(
        (c2["cluster"].as_str(), c2["connectivity"].as_str()),
        (Some("c2"), Some("Available"))
    );
    assert_eq!(c2["resources"][0]["GVK"]["Group"], "apps");

    // web everywhere (replicas 2, 5 on c3), db on c2 only, labelled with what they belong to.
    for (cluster, replicas) in clusters.iter().zip([2, 2, 5]) {
        let web = cluster.object(WEB).expect("web deployed");
        assert_eq!(web["spec"]["replicas"], replicas);
        let labels = &web["metadata"]["labels"];
        assert_eq!(labels["wasmco.io/app"], "web");
        assert_eq!(
            labels["wasmco.io/deployment-intent-group"],
            wasmco_rsync::owner_label("shop/store/v1/live")
        );
        assert!(cluster.object(WEB_SERVICE).is_some());
    }
    assert!(clusters[0].object(DB).is_none());
    assert_eq!(
        clusters[1].object(DB).unwrap()["metadata"]["labels"]["tier"],
        "data"
    );
    assert!(clusters[2].object(DB).is_none());

    // kubectl sees them too, through the cluster's kubeconfig.
    let kubectl = Command::new("kubectl")
        .args([
            "get",
            "deployments",
            "--all-namespaces",
            "-l",
            "wasmco.io/app",
            "-o",
            "name",
        ])
        .env("KUBECONFIG", &clusters[1].kubeconfig_path)
        .output()
        .expect("kubectl runs (Debian: apt-get install kubernetes-client)");
    assert!(
        kubectl.status.success(),
        "{}",
        String::from_utf8_lossy(&kubectl.stderr)
    );
    let mut listed: Vec<String> = String::from_utf8_lossy(&kubectl.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    listed.sort();
    assert_eq!(listed, ["deployment.apps/db", "deployment.apps/web"]);

    expect(action(&server, DIG, "terminate"), 202);
    wait_until("every object to be gone", CONVERGENCE, || {
        clusters.iter().all(|c| {
            c.object(WEB).is_none() && c.object(WEB_SERVICE).is_none() && c.object(DB).is_none()
        })
    });
}

fn put_db_placement(server: &Server, label: &str) {
    let path = format!("{DIG}/generic-placement-intents/gpi/app-intents/db");
    let intent = serde_json::json!({"app": "db", "intent": {"anyOf": [{"clusterProvider": "edge", "clusterLabel": label}]}});
    expect(
        server.put(&path, crate::support::server::doc("db", intent)),
        200,
    );
}

#[test]
fn update_and_rollback_converge() {
    let clusters = [
        Virtual::start("c1"),
        Virtual::start("c2"),
        Virtual::start("c3"),
    ];
    let (_data, server) = instantiated(&clusters);
    wait_until("db on c2", CONVERGENCE, || clusters[1].object(DB).is_some());
    // An object of ours that no revision lists (what a crash between an
    // apply and its context's write would leave): the update finds it by
    // its labels and removes it.
    let orphan = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "orphan", "labels": {"wasmco.io/deployment-intent-group": wasmco_rsync::owner_label("shop/store/v1/live"), "wasmco.io/app": "web"}},
        "spec": {"replicas": 1}});
    let created = Client::new()
        .post(format!(
            "{}/apis/apps/v1/namespaces/default/deployments",
            clusters[0].base
        ))
        .json(&orphan)
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    // db moves from the west (c2) to the east (c1): added there, deleted here.
    put_db_placement(&server, "east");
    expect(action(&server, DIG, "update"), 202);
    wait_until("db moved to c1", CONVERGENCE, || {
        clusters[0].object(DB).is_some() && clusters[1].object(DB).is_none()
    });
    wait_until("the orphan removed", CONVERGENCE, || {
        clusters[0]
            .object("/apis/apps/v1/namespaces/default/deployments/orphan")
            .is_none()
    });
    assert!(clusters[2].object(DB).is_none());
    // Rolling back to revision 1 moves it back.
    let back = server
        .client
        .post(server.url(&format!("{DIG}/rollback")))
        .json(&serde_json::json!({"revision": 1}))
        .send()
        .unwrap();
    expect(back, 202);
    wait_until("db back on c2", CONVERGENCE, || {
        clusters[1].object(DB).is_some() && clusters[0].object(DB).is_none()
    });
    // web was never dropped: it stayed on every cluster throughout.
    assert!(clusters.iter().all(|c| c.object(WEB).is_some()));
}

#[test]
fn a_server_killed_mid_apply_resumes_and_converges() {
    // Every request to these clusters takes 150 ms: the kill lands mid-apply.
    let clusters = [
        Virtual::start_slow("c1", 150),
        Virtual::start_slow("c2", 150),
        Virtual::start_slow("c3", 150),
    ];
    let (data, server) = instantiated(&clusters);
    // Some way into the apply, which is the point: no signal to wait for
    // (a look at these clusters takes 150 ms itself); the assertion below
    // checks the kill did land mid-apply.
    std::thread::sleep(Duration::from_millis(400));
    server.kill();
    let uids_before: Vec<Option<Value>> = clusters
        .iter()
        .map(|c| c.object(WEB).map(|w| w["metadata"]["uid"].clone()))
        .collect();
    let partial = uids_before.iter().filter(|u| u.is_some()).count();
    assert!(
        partial < 3,
        "the apply had already finished; the test proves nothing"
    );
    let server = Server::start(data.path());
    let status = |query: &str| expect(server.get(&format!("{DIG}/status?{query}")), 200);
    wait_until("the restarted server to finish", CONVERGENCE, || {
        status("status=ready")["readyStatus"] == "Ready"
    });
    for (cluster, uid_before) in clusters.iter().zip(&uids_before) {
        let web = cluster.object(WEB).expect("web deployed");
        // What was applied before the kill was updated in place, not made again.
        if let Some(uid) = uid_before {
            assert_eq!(&web["metadata"]["uid"], uid);
        }
        assert_eq!(web["metadata"]["labels"]["wasmco.io/app"], "web");
        let list: Value = Client::new()
            .get(format!("{}/apis/apps/v1/namespaces/default/deployments?labelSelector=wasmco.io%2Fapp%3Dweb", cluster.base))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
    }
}

/// The shop on c1, c2 and a troubled c3 (`c3_kubeconfig`), instantiated by
/// a server started with `args`: c1 and c2 get it while c3 is marked
/// Retrying; once `recover` has run, everything is Ready and c3 Available.
fn retried_until_recovered(c3_kubeconfig: Vec<u8>, args: &[&str], recover: impl FnOnce()) {
    let (c1, c2) = (Virtual::start("c1"), Virtual::start("c2"));
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), args);
    set_up_with(
        &server,
        [c1.kubeconfig.clone(), c2.kubeconfig.clone(), c3_kubeconfig],
    );
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);
    // The other clusters go on while c3 is retried.
    wait_until("c1 and c2", CONVERGENCE, || {
        c1.object(WEB).is_some() && c2.object(WEB).is_some()
    });
    let connectivity = || {
        let status = expect(
            server.get(&format!("{DIG}/status?app=web&cluster=edge%2Bc3")),
            200,
        );
        status["apps"][0]["clusters"][0]["connectivity"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    wait_until("c3 to be marked Retrying", CONVERGENCE, || {
        connectivity() == "Retrying"
    });
    recover();
    let status = |query: &str| expect(server.get(&format!("{DIG}/status?{query}")), 200);
    wait_until("everything ready once c3 answers", CONVERGENCE, || {
        status("status=ready")["readyStatus"] == "Ready"
    });
    assert_eq!(connectivity(), "Available");
}

/// The web Deployment as `cluster` holds it.
fn web_on(cluster: &wasmco_vcluster::VirtualCluster) -> Value {
    Client::new()
        .get(format!("http://{}{WEB}", cluster.addr()))
        .send()
        .unwrap()
        .json()
        .unwrap()
}

/// Workloads ready at once, every answer after `latency`.
fn answering_in(latency: Duration) -> wasmco_vcluster::Behaviour {
    wasmco_vcluster::Behaviour {
        ready_after: Duration::from_millis(100),
        latency,
        ..Default::default()
    }
}

fn c3_answering_in(
    runtime: &tokio::runtime::Runtime,
    latency: Duration,
) -> wasmco_vcluster::VirtualCluster {
    runtime
        .block_on(wasmco_vcluster::VirtualCluster::start(
            "c3",
            "127.0.0.1:0".parse().unwrap(),
            answering_in(latency),
        ))
        .unwrap()
}

#[test]
fn a_cluster_refusing_connections_is_retried_and_converges() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut flaky = c3_answering_in(&runtime, Duration::ZERO);
    runtime.block_on(flaky.refuse_connections());
    let kubeconfig = flaky.kubeconfig().into_bytes();
    retried_until_recovered(kubeconfig, &[], || {
        runtime.block_on(flaky.reopen()).unwrap()
    });
    assert_eq!(web_on(&flaky)["spec"]["replicas"], 5);
}

#[test]
fn a_cluster_too_slow_to_answer_is_retried_not_waited_on() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Frozen, as far as a client can tell: every answer takes a minute.
    let frozen = c3_answering_in(&runtime, Duration::from_secs(60));
    retried_until_recovered(
        frozen.kubeconfig().into_bytes(),
        &["--cluster-timeout", "500ms"],
        || frozen.set_behaviour(answering_in(Duration::ZERO)),
    );
    assert_eq!(web_on(&frozen)["spec"]["replicas"], 5);
}

#[test]
fn a_directory_target_writes_each_clusters_manifests() {
    let data = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        data.path(),
        &["--sync-to-directory", out.path().to_str().unwrap()],
    );
    let kubeconfig = crate::support::server::fixture("kubeconfig.yaml");
    set_up_with(
        &server,
        [kubeconfig.clone(), kubeconfig.clone(), kubeconfig],
    );
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);
    let file = |cluster: &str, name: &str| out.path().join(format!("edge+{cluster}/{name}.yaml"));
    let status = || expect(server.get(&format!("{DIG}/status?status=ready")), 200);
    wait_until("the files", CONVERGENCE, || {
        status()["readyStatus"] == "Ready"
    });
    let web = std::fs::read_to_string(file("c3", "deployment-web")).unwrap();
    assert!(
        web.contains("replicas: 5") && web.contains("wasmco.io/app: web"),
        "{web}"
    );
    assert!(file("c2", "deployment-db").exists());
    assert!(!file("c1", "deployment-db").exists());
    expect(action(&server, DIG, "terminate"), 202);
    wait_until("the files to go", CONVERGENCE, || {
        !file("c1", "deployment-web").exists() && !file("c2", "deployment-db").exists()
    });
}

#[test]
fn an_app_waits_for_the_app_it_depends_on_to_be_ready() {
    // Workloads take 2 s to become ready; web depends on db being Ready.
    let clusters = [
        Virtual::start_with("c1", 0, 2000),
        Virtual::start_with("c2", 0, 2000),
        Virtual::start_with("c3", 0, 2000),
    ];
    let (_data, _server) = instantiated(&clusters);
    wait_until("db on c2", CONVERGENCE, || clusters[1].object(DB).is_some());
    // While db is not ready, web is nowhere.
    assert!(
        clusters.iter().all(|c| c.object(WEB).is_none()),
        "web went out before db was ready"
    );
    wait_until("web", CONVERGENCE, || {
        clusters.iter().all(|c| c.object(WEB).is_some())
    });
    let db = clusters[1].object(DB).unwrap();
    assert_eq!(
        db["status"]["availableReplicas"], 1,
        "db was ready before web started"
    );
}
