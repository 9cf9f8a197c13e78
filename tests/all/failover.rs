//! Failover on virtual clusters and on real API servers: a DIG whose
//! failover intent says `replace` leaves a cluster that stays unreachable
//! past the grace period, by itself, and is removed from it once it
//! answers again; a cluster that only flaps keeps its apps, and one just
//! back is not chosen.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmco_vcluster::{Behaviour, VirtualCluster};

use crate::deploy::action;
use crate::kube_apiserver::{ApiServer, kubectl};
use crate::support::clusters::{approved_dig_with, composite_app_with, config_map};
use crate::support::server::{Server, doc, expect};
use crate::support::wait::wait_until;

/// The grace period of the tests' failover intent.
const GRACE: Duration = Duration::from_secs(3);

/// What the issue allows past the grace period for the app to be Ready
/// elsewhere.
const MOVE_BUDGET: Duration = Duration::from_secs(10);

const WEB: &str = "/api/v1/namespaces/default/configmaps/web";

/// The clusters' names, in order.
const NAMES: [&str; 3] = ["a", "b", "c"];

/// A cluster the tests kill and bring back.
enum Machine {
    /// In this process: it stops answering, then answers again.
    Virtual(VirtualCluster),
    /// kube-apiserver over its etcd: the server is killed, then started
    /// again on its port.
    Real(ApiServer),
}

impl Machine {
    fn kubeconfig(&self) -> Vec<u8> {
        match self {
            Machine::Virtual(cluster) => cluster.kubeconfig().into_bytes(),
            Machine::Real(server) => server.kubeconfig.clone(),
        }
    }

    /// Whether it holds `web` (false while it is down).
    fn holds_web(&self) -> bool {
        match self {
            Machine::Virtual(cluster) => {
                let url = format!("http://{}{WEB}", cluster.addr());
                reqwest::blocking::Client::new()
                    .get(url)
                    .send()
                    .is_ok_and(|r| r.status().is_success())
            }
            Machine::Real(server) => kubectl(
                &server.kubeconfig_path,
                &["get", "configmap", "web", "-n", "default"],
            )
            .status
            .success(),
        }
    }
}

/// Clusters `a`, `b`, … labelled `edge`, a server probing them every
/// second, and the app `web` placed on one of them (anyOf by label) by a
/// DIG with a failover intent; the DIG's path.
struct Fleet {
    runtime: tokio::runtime::Runtime,
    machines: Vec<Machine>,
    server: Server,
    _data: tempfile::TempDir,
    dig: String,
}

impl Fleet {
    /// Three virtual clusters.
    fn start(healthy_seconds: u64) -> Fleet {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let machines = ["a", "b", "c"]
            .iter()
            .map(|name| {
                let behaviour = Behaviour {
                    ready_after: Duration::from_millis(50),
                    ..Default::default()
                };
                let addr = "127.0.0.1:0".parse().unwrap();
                let cluster = runtime
                    .block_on(VirtualCluster::start(name, addr, behaviour))
                    .unwrap();
                Machine::Virtual(cluster)
            })
            .collect();
        Self::start_on(runtime, machines, healthy_seconds)
    }

    fn start_on(
        runtime: tokio::runtime::Runtime,
        machines: Vec<Machine>,
        healthy_seconds: u64,
    ) -> Fleet {
        let data = tempfile::tempdir().unwrap();
        let server = Server::start_with(data.path(), &["--probe-interval", "1s"]);
        expect(
            server.post("/v2/cluster-providers", doc("edge", json!({}))),
            201,
        );
        for (name, machine) in NAMES.iter().zip(&machines) {
            server.register_labelled("edge", name, &machine.kubeconfig(), &["edge"]);
        }
        let web = config_map("web", json!({"greeting": "hello"}));
        let ca = composite_app_with(&server, "shop", "store", &[("web", web)]);
        let failover = json!({"policy": "replace", "graceSeconds": GRACE.as_secs(),
            "healthySeconds": healthy_seconds});
        let any_edge = json!({"anyOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]});
        let dig = approved_dig_with(
            &server,
            &ca,
            &[("web", any_edge)],
            &[("failover-intents", "failoverIntent", "fo", failover)],
        );
        expect(action(&server, &dig, "instantiate"), 202);
        Fleet {
            runtime,
            machines,
            server,
            _data: data,
            dig,
        }
    }

    /// Which clusters hold `web`, by index.
    fn holding(&self) -> Vec<usize> {
        (0..self.machines.len())
            .filter(|&i| self.machines[i].holds_web())
            .collect()
    }

    /// The one cluster `web` is Ready on, once it is on exactly one and
    /// the DIG's status says Ready at `revision`.
    fn ready_on(&self, revision: u64, within: Duration) -> usize {
        let mut on = Vec::new();
        wait_until(
            format!("web Ready on one cluster at revision {revision}"),
            within,
            || {
                let status = self.status();
                on = self.holding();
                status["revision"] == revision && status["readyStatus"] == "Ready" && !on.is_empty()
            },
        );
        on[0]
    }

    fn status(&self) -> Value {
        expect(
            self.server
                .get(&format!("{}/status?status=ready", self.dig)),
            200,
        )
    }

    fn kill(&mut self, cluster: usize) {
        match &mut self.machines[cluster] {
            Machine::Virtual(virtual_cluster) => {
                self.runtime.block_on(virtual_cluster.refuse_connections());
            }
            Machine::Real(server) => server.kill_apiserver(),
        }
    }

    fn revive(&mut self, cluster: usize) {
        match &mut self.machines[cluster] {
            Machine::Virtual(virtual_cluster) => {
                self.runtime.block_on(virtual_cluster.reopen()).unwrap();
            }
            Machine::Real(server) => server.restart_apiserver(),
        }
    }

    /// The reasons the DIG's history gives for wasmco's own moves.
    fn moves(&self) -> Vec<String> {
        let state = self.status();
        state["states"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["reason"].as_str().map(str::to_owned))
            .collect()
    }
}

/// Kills the cluster holding `web`: it is Ready on another within the
/// grace period and 10 s, one move recorded with its reason naming the
/// cluster; once the cluster answers again its copy is removed and
/// nothing moves back.
fn fails_over_and_cleans_up(fleet: &mut Fleet) {
    let first = fleet.ready_on(1, Duration::from_secs(30));
    assert_eq!(fleet.holding(), [first]);
    fleet.kill(first);
    let killed = Instant::now();
    let second = fleet.ready_on(2, GRACE + MOVE_BUDGET);
    let moved_in = killed.elapsed();
    assert_ne!(second, first);
    eprintln!("failover: Ready elsewhere {moved_in:?} after the kill (grace {GRACE:?})");
    let moves = fleet.moves();
    assert_eq!(moves.len(), 1, "{moves:?}");
    assert!(
        moves[0].contains(&format!("edge+{}", NAMES[first])),
        "{moves:?}"
    );

    fleet.revive(first);
    wait_until(
        "the cluster left to be cleaned up",
        Duration::from_secs(30),
        || fleet.holding() == [second],
    );
    std::thread::sleep(GRACE);
    assert_eq!(fleet.status()["revision"], 2);
    assert_eq!(fleet.holding(), [second]);
}

#[test]
fn a_killed_cluster_loses_its_app_within_grace_plus_10s_and_is_cleaned_up_when_back() {
    let mut fleet = Fleet::start(60);
    for (spec, field) in [
        (
            json!({"policy": "replace", "graceSeconds": 0}),
            "spec.graceSeconds",
        ),
        (json!({"policy": "sometimes"}), "policy"),
    ] {
        let refused = fleet
            .server
            .post(&format!("{}/failover-intents", fleet.dig), doc("bad", spec));
        let body = expect(refused, 400);
        assert!(body.to_string().contains(field), "{body}");
    }
    fails_over_and_cleans_up(&mut fleet);
}

/// The same on two real API servers: the one holding `web` is killed (its
/// etcd keeps the object), and started again on its port.
#[test]
fn a_killed_api_server_loses_its_app_and_is_cleaned_up_when_started_again() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let machines = ["failover-a", "failover-b"]
        .map(|dir| Machine::Real(ApiServer::start(dir)))
        .into();
    let mut fleet = Fleet::start_on(runtime, machines, 60);
    fails_over_and_cleans_up(&mut fleet);
}

#[test]
fn a_flapping_cluster_keeps_its_apps_and_one_just_back_is_not_chosen() {
    let mut fleet = Fleet::start(120);
    let first = fleet.ready_on(1, Duration::from_secs(30));

    // Outages shorter than the grace period move nothing.
    for _ in 0..3 {
        fleet.kill(first);
        std::thread::sleep(GRACE / 2);
        fleet.revive(first);
        std::thread::sleep(Duration::from_secs(2));
    }
    assert_eq!(fleet.status()["revision"], 1);
    assert_eq!(fleet.holding(), [first]);

    // A long one moves the app; the cluster comes back, and when the
    // app's new cluster dies too, the one just back is passed over.
    fleet.kill(first);
    let second = fleet.ready_on(2, GRACE + MOVE_BUDGET);
    fleet.revive(first);
    wait_until(
        "the first cluster cleaned up",
        Duration::from_secs(30),
        || fleet.holding() == [second],
    );
    fleet.kill(second);
    let third = fleet.ready_on(3, GRACE + MOVE_BUDGET);
    assert!(
        third != first && third != second,
        "{first} {second} {third}"
    );
    assert_eq!(fleet.moves().len(), 2);
}
