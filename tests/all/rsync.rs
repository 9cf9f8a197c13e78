//! rsync against three virtual clusters, end to end through the REST API:
//! every placed object lands with its content and labels in the right
//! clusters and nowhere else, status reaches Ready, terminate removes it all.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::Value;

use crate::deploy::{DIG, action, set_up_with};
use crate::http::{Server, expect};

/// A `wasmco virtual-cluster` process.
struct Virtual {
    child: Child,
    base: String,
    kubeconfig: Vec<u8>,
    _dir: tempfile::TempDir,
}

impl Virtual {
    fn start(name: &str) -> Virtual {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_wasmco"))
            .args([
                "virtual-cluster",
                "--ready-after-ms",
                "100",
                "--name",
                name,
                "--kubeconfig",
            ])
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line.trim().rsplit(' ').next().unwrap().to_owned();
        let kubeconfig = std::fs::read(&path).unwrap();
        Virtual {
            child,
            base,
            kubeconfig,
            _dir: dir,
        }
    }

    /// The object at `path`, if it exists.
    fn object(&self, path: &str) -> Option<Value> {
        let response = Client::new()
            .get(format!("{}{path}", self.base))
            .send()
            .unwrap();
        (response.status() == 200).then(|| response.json().unwrap())
    }
}

impl Drop for Virtual {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up_with(&server, clusters.each_ref().map(|c| c.kubeconfig.clone()));
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);

    let status = |query: &str| expect(server.get(&format!("{DIG}/status?{query}")), 200);
    wait_for("every resource to be ready", || {
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
            "shop.store.v1.live"
        );
        assert_eq!(labels["wasmco.io/context-revision"], "1");
        assert!(cluster.object(WEB_SERVICE).is_some());
    }
    assert!(clusters[0].object(DB).is_none());
    assert_eq!(
        clusters[1].object(DB).unwrap()["metadata"]["labels"]["tier"],
        "data"
    );
    assert!(clusters[2].object(DB).is_none());

    expect(action(&server, DIG, "terminate"), 202);
    wait_for("every object to be gone", || {
        clusters.iter().all(|c| {
            c.object(WEB).is_none() && c.object(WEB_SERVICE).is_none() && c.object(DB).is_none()
        })
    });
}
