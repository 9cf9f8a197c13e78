//! Failover on virtual clusters: a DIG whose failover intent says
//! `replace` leaves a cluster that stays unreachable past the grace
//! period, by itself, and is removed from it once it answers again; a
//! cluster that only flaps keeps its apps, and one just back is not
//! chosen.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmco_vcluster::{Behaviour, VirtualCluster};

use crate::deploy::action;
use crate::support::clusters::{composite_app_with, config_map};
use crate::support::server::{Server, doc, expect};
use crate::support::wait::wait_until;

/// The grace period of the tests' failover intent.
const GRACE: Duration = Duration::from_secs(3);

/// What the issue allows past the grace period for the app to be Ready
/// elsewhere.
const MOVE_BUDGET: Duration = Duration::from_secs(10);

const WEB: &str = "/api/v1/namespaces/default/configmaps/web";

/// Three virtual clusters in this process, a server probing them every
/// second, and the app `web` placed on one of them (anyOf by label) by a
/// DIG with a failover intent; the DIG's path.
struct Fleet {
    runtime: tokio::runtime::Runtime,
    clusters: Vec<VirtualCluster>,
    server: Server,
    _data: tempfile::TempDir,
    dig: String,
}

impl Fleet {
    fn start(healthy_seconds: u64) -> Fleet {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let clusters: Vec<VirtualCluster> = ["a", "b", "c"]
            .iter()
            .map(|name| {
                let behaviour = Behaviour {
                    ready_after: Duration::from_millis(50),
                    ..Default::default()
                };
                let addr = "127.0.0.1:0".parse().unwrap();
                runtime
                    .block_on(VirtualCluster::start(name, addr, behaviour))
                    .unwrap()
            })
            .collect();
        let data = tempfile::tempdir().unwrap();
        let server = Server::start_with(data.path(), &["--probe-interval", "1s"]);
        expect(
            server.post("/v2/cluster-providers", doc("edge", json!({}))),
            201,
        );
        for (name, cluster) in ["a", "b", "c"].iter().zip(&clusters) {
            let kubeconfig = cluster.kubeconfig().into_bytes();
            server.register_labelled("edge", name, &kubeconfig, &["edge"]);
        }
        let web = config_map("web", json!({"greeting": "hello"}));
        let ca = composite_app_with(&server, "shop", "store", &[("web", web)]);
        let dig = format!("{ca}/deployment-intent-groups/d");
        let failover = json!({"policy": "replace", "graceSeconds": GRACE.as_secs(),
            "healthySeconds": healthy_seconds});
        let any_edge = json!({"anyOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]});
        let intents = json!({"intent": {"genericPlacementIntent": "gpi", "failoverIntent": "fo"}});
        for (path, name, spec) in [
            (format!("{ca}/composite-profiles"), "prof", json!({})),
            (
                format!("{ca}/deployment-intent-groups"),
                "d",
                json!({"compositeProfile": "prof", "version": "r1"}),
            ),
            (format!("{dig}/generic-placement-intents"), "gpi", json!({})),
            (
                format!("{dig}/generic-placement-intents/gpi/app-intents"),
                "web",
                json!({"app": "web", "intent": any_edge}),
            ),
            (format!("{dig}/failover-intents"), "fo", failover),
            (format!("{dig}/intents"), "i", intents),
        ] {
            expect(server.post(&path, doc(name, spec)), 201);
        }
        expect(action(&server, &dig, "approve"), 202);
        expect(action(&server, &dig, "instantiate"), 202);
        Fleet {
            runtime,
            clusters,
            server,
            _data: data,
            dig,
        }
    }

    /// Which clusters hold `web`, by index.
    fn holding(&self) -> Vec<usize> {
        let client = reqwest::blocking::Client::new();
        (0..self.clusters.len())
            .filter(|&i| {
                let url = format!("http://{}{WEB}", self.clusters[i].addr());
                client
                    .get(url)
                    .send()
                    .is_ok_and(|r| r.status().is_success())
            })
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
        self.runtime
            .block_on(self.clusters[cluster].refuse_connections());
    }

    fn revive(&mut self, cluster: usize) {
        self.runtime
            .block_on(self.clusters[cluster].reopen())
            .unwrap();
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

#[test]
fn a_killed_cluster_loses_its_app_within_grace_plus_10s_and_is_cleaned_up_when_back() {
    let mut fleet = Fleet::start(60);
    let first = fleet.ready_on(1, Duration::from_secs(30));
    assert_eq!(fleet.holding(), [first]);
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

    fleet.kill(first);
    let killed = Instant::now();
    let second = fleet.ready_on(2, GRACE + MOVE_BUDGET);
    let moved_in = killed.elapsed();
    assert_ne!(second, first);
    eprintln!("failover: Ready elsewhere {moved_in:?} after the kill (grace {GRACE:?})");
    let moves = fleet.moves();
    assert_eq!(moves.len(), 1, "{moves:?}");
    assert!(
        moves[0].contains(&format!("edge+{}", ["a", "b", "c"][first])),
        "{moves:?}"
    );

    // Back: what it still holds of the DIG is removed, nothing moves back.
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
