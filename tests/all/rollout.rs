//! Progressive rollouts on twelve virtual clusters in three groups: a
//! group goes only once the one before is Ready, a pause holds the next,
//! a group that is not Ready in time stops the rollout with the clusters
//! named, and an abort rolls the groups that went back to the previous
//! revision while the held group is never touched.

use std::time::Duration;

use serde_json::{Value, json};
use wasmco_vcluster::{Behaviour, VirtualCluster};

use crate::deploy::action;
use crate::support::clusters::{DigIntent, approved_dig_with, composite_app_with};
use crate::support::server::{Server, doc, expect, wasm};
use crate::support::wait::wait_until;

const WEB: &str = "/apis/apps/v1/namespaces/default/deployments/web";

/// How long a group takes to be Ready here.
const READY_AFTER: Duration = Duration::from_millis(700);

/// Twelve clusters `c01`…`c12` (groups of four in name order), a server,
/// and DIG `d` placing the Deployment `web` on all of them through a
/// rollout intent of three groups.
struct Fleet {
    _runtime: tokio::runtime::Runtime,
    clusters: Vec<VirtualCluster>,
    server: Server,
    _data: tempfile::TempDir,
    dig: String,
}

fn ready_after(delay: Duration) -> Behaviour {
    Behaviour {
        ready_after: delay,
        ..Default::default()
    }
}

impl Fleet {
    fn start() -> Fleet {
        Self::with_waves(
            json!({"groups": {"count": 3}, "maxFailures": 0, "groupTimeoutSeconds": 4}),
            &[],
            &[],
        )
    }

    /// The fleet with `waves` as the rollout intent, after uploading each
    /// of `controllers` (name, type and test guest), with `more` intents.
    fn with_waves(
        waves: Value,
        controllers: &[(&str, &str, &str)],
        more: &[DigIntent<'_>],
    ) -> Fleet {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let names: Vec<String> = (1..=12).map(|i| format!("c{i:02}")).collect();
        let clusters: Vec<VirtualCluster> = names
            .iter()
            .map(|name| {
                let addr = "127.0.0.1:0".parse().unwrap();
                let start = VirtualCluster::start(name, addr, ready_after(READY_AFTER));
                runtime.block_on(start).unwrap()
            })
            .collect();
        let data = tempfile::tempdir().unwrap();
        let server = Server::start_with(data.path(), &["--probe-interval", "1s"]);
        expect(
            server.post("/v2/cluster-providers", doc("edge", json!({}))),
            201,
        );
        for (name, cluster) in names.iter().zip(&clusters) {
            let kubeconfig = cluster.kubeconfig().into_bytes();
            server.register_labelled("edge", name, &kubeconfig, &["edge"]);
        }
        let web = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec: {replicas: 1}\n";
        let ca = composite_app_with(&server, "shop", "store", &[("web", web.to_owned())]);
        for (name, kind, guest) in controllers {
            let metadata = doc(name, json!({"type": kind, "priority": 10}));
            let uploaded = server.upload("/v2/controllers", metadata, Some(wasm(guest)));
            expect(uploaded, 201);
        }
        let every_edge = json!({"allOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]});
        let dig = approved_dig_with(
            &server,
            &ca,
            &[("web", every_edge)],
            &[
                &[("rollout-intents", "rolloutIntent", "waves", waves)],
                more,
            ]
            .concat(),
        );
        Fleet {
            _runtime: runtime,
            clusters,
            server,
            _data: data,
            dig,
        }
    }

    /// `web`'s replicas on cluster `index` (0-based), if it has `web`.
    fn replicas(&self, index: usize) -> Option<u64> {
        let url = format!("http://{}{WEB}", self.clusters[index].addr());
        let answer = reqwest::blocking::get(url).ok()?;
        if !answer.status().is_success() {
            return None;
        }
        answer.json::<Value>().ok()?["spec"]["replicas"].as_u64()
    }

    fn replicas_of(&self, group: std::ops::Range<usize>) -> Vec<Option<u64>> {
        group.map(|i| self.replicas(i)).collect()
    }

    fn rollout(&self) -> Value {
        expect(self.server.get(&format!("{}/rollout", self.dig)), 200)
    }

    fn post(&self, what: &str) -> Value {
        expect(
            self.server
                .post(&format!("{}/{what}", self.dig), Value::Null),
            202,
        )
    }

    fn wait_for_phase(&self, phase: &str, within: Duration) -> Value {
        let mut last = Value::Null;
        wait_until(format!("the rollout {phase}"), within, || {
            last = self.rollout();
            last["rollout"]["phase"] == phase
        });
        last
    }
}

const GROUP_1: std::ops::Range<usize> = 0..4;
const GROUP_2: std::ops::Range<usize> = 4..8;
const GROUP_3: std::ops::Range<usize> = 8..12;

#[test]
fn a_rollout_over_12_clusters_in_3_groups_stops_at_the_failing_group_and_rolls_back_on_abort() {
    let fleet = Fleet::start();
    let bad = fleet.server.post(
        &format!("{}/rollout-intents", fleet.dig),
        doc("bad", json!({"groups": {}})),
    );
    assert!(expect(bad, 400).to_string().contains("spec.groups"));

    // The instantiate goes a group at a time; paused, the next waits.
    expect(action(&fleet.server, &fleet.dig, "instantiate"), 202);
    let paused = fleet.post("rollout/pause");
    assert_eq!(paused["rollout"]["phase"], "Paused");
    std::thread::sleep(READY_AFTER * 3);
    let status = fleet.rollout();
    assert_eq!(status["rollout"]["released"], 1, "{status}");
    assert_eq!(status["groups"][0][0], "edge+c01");
    assert_eq!(fleet.replicas_of(GROUP_2), [None; 4]);
    assert_eq!(fleet.replicas_of(GROUP_1), [Some(1); 4]);
    let refused = fleet
        .server
        .post(&format!("{}/rollout/pause", fleet.dig), Value::Null);
    expect(refused, 409);
    fleet.post("rollout/resume");
    wait_until("group 2 released", Duration::from_secs(10), || {
        fleet.rollout()["rollout"]["released"] == 2
    });
    assert_eq!(fleet.replicas_of(GROUP_3), [None; 4], "group 3 is held");
    fleet.wait_for_phase("Done", Duration::from_secs(20));
    wait_until("every cluster with web", Duration::from_secs(10), || {
        fleet.replicas_of(0..12) == [Some(1); 12]
    });

    // An update whose second group never gets Ready stops there.
    for cluster in &fleet.clusters[GROUP_2] {
        cluster.set_behaviour(ready_after(Duration::from_secs(3600)));
    }
    let writes_of_group_3: Vec<u64> = fleet.clusters[GROUP_3].iter().map(|c| c.writes()).collect();
    let three = json!({"compositeProfile": "prof", "version": "r1", "overrideValues":
        [{"app": "web", "values": {"Deployment/web": {"spec": {"replicas": 3}}}}]});
    expect(fleet.server.put(&fleet.dig, doc("d", three)), 200);
    expect(action(&fleet.server, &fleet.dig, "update"), 202);
    let stopped = fleet.wait_for_phase("Stopped", Duration::from_secs(30));
    let reason = stopped["rollout"]["reason"].as_str().unwrap();
    assert!(reason.contains("group 2 of 3"), "{reason}");
    assert!(reason.contains("edge+c05 (not Ready in time)"), "{reason}");
    assert_eq!(fleet.replicas_of(GROUP_1), [Some(3); 4]);
    assert_eq!(fleet.replicas_of(GROUP_2), [Some(3); 4]);
    assert_eq!(fleet.replicas_of(GROUP_3), [Some(1); 4]);

    // Aborted: the groups that went are back at revision 1; the held one
    // was never written to.
    let aborted = fleet.post("rollout/abort");
    assert_eq!(aborted["revision"], 1);
    let reasons: Vec<&str> = aborted["states"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["rollout of revision 2 aborted"]);
    wait_until(
        "groups 1 and 2 back at one replica",
        Duration::from_secs(20),
        || fleet.replicas_of(0..12) == [Some(1); 12],
    );
    let after: Vec<u64> = fleet.clusters[GROUP_3].iter().map(|c| c.writes()).collect();
    assert_eq!(after, writes_of_group_3);
    assert!(fleet.rollout()["rollout"].is_null());
}

#[test]
fn a_gate_that_waits_is_honoured_and_one_that_traps_stops_the_rollout_with_its_message() {
    let soak_ms = 1500;
    let waves = json!({"groups": {"count": 3}, "gates": [
        {"controller": "soak", "intent": {"do": "soak", "readyMs": soak_ms}},
        {"controller": "breaker", "intent": {"do": "proceed"}}]});
    let gate = "guest_gate.wasm";
    let gates = [("soak", "gate", gate), ("breaker", "gate", gate)];
    let fleet = Fleet::with_waves(waves, &gates, &[]);
    expect(action(&fleet.server, &fleet.dig, "instantiate"), 202);
    let waiting = eventually_reason(&fleet, "waits");
    assert!(
        waiting.contains("gate soak waits: group 1 Ready for"),
        "{waiting}"
    );
    assert_eq!(fleet.rollout()["rollout"]["released"], 1);
    assert_eq!(fleet.replicas_of(GROUP_2), [None; 4]);
    let done = std::time::Instant::now();
    fleet.wait_for_phase("Done", Duration::from_secs(30));
    // Two soaks of the gate, after two groups became Ready.
    assert!(
        done.elapsed() >= Duration::from_millis(2 * soak_ms),
        "{:?}",
        done.elapsed()
    );

    // The second gate now traps: the update stops after its first group,
    // with the guest's panic as the reason.
    let breaker = json!({"groups": {"count": 3}, "gates": [
        {"controller": "breaker", "intent": {"do": "trap"}}]});
    expect(
        fleet.server.put(
            &format!("{}/rollout-intents/waves", fleet.dig),
            doc("waves", breaker),
        ),
        200,
    );
    let three = json!({"compositeProfile": "prof", "version": "r1", "overrideValues":
        [{"app": "web", "values": {"Deployment/web": {"spec": {"replicas": 3}}}}]});
    expect(fleet.server.put(&fleet.dig, doc("d", three)), 200);
    expect(action(&fleet.server, &fleet.dig, "update"), 202);
    let stopped = fleet.wait_for_phase("Stopped", Duration::from_secs(30));
    let reason = stopped["rollout"]["reason"].as_str().unwrap();
    assert!(reason.contains("breaker"), "{reason}");
    assert!(reason.contains("the gate broke on group 1"), "{reason}");
    assert_eq!(stopped["rollout"]["released"], 1);
    assert_eq!(fleet.replicas_of(GROUP_2), [Some(1); 4]);

    // A gate named in the DIG's intents as a controller is refused there.
    let misplaced = fleet.server.post(
        &format!("{}/intents", fleet.dig),
        doc("misplaced", json!({"intent": {"soak": "x"}})),
    );
    expect(misplaced, 201);
    let refused = action(&fleet.server, &fleet.dig, "update");
    let body = expect(refused, 422);
    assert!(body.to_string().contains("gate controller"), "{body}");
}

/// The rollout's reason once it contains `word`.
fn eventually_reason(fleet: &Fleet, word: &str) -> String {
    let mut reason = String::new();
    wait_until(
        format!("a rollout reason with {word:?}"),
        Duration::from_secs(20),
        || {
            reason = fleet.rollout()["rollout"]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            reason.contains(word)
        },
    );
    reason
}

#[test]
fn a_rollout_in_placement_order_releases_what_a_placement_controller_ranked_first() {
    let waves = json!({"groups": {"size": 3}, "order": "placement", "pauseSeconds": 3600});
    let first = json!({"first": ["c12", "c07", "c03"]});
    let fleet = Fleet::with_waves(
        waves,
        &[("rank", "placement", "guest_rank.wasm")],
        &[("controller-intents", "rank", "ranked", first)],
    );
    expect(action(&fleet.server, &fleet.dig, "instantiate"), 202);
    wait_until("group 1 Ready", Duration::from_secs(10), || {
        fleet.rollout()["rollout"]["readyAt"].is_string()
    });
    let status = fleet.rollout();
    assert_eq!(
        status["groups"][0],
        json!(["edge+c12", "edge+c07", "edge+c03"]),
        "{status}"
    );
    // Then the rest, as generic placement left them.
    assert_eq!(
        status["groups"][1],
        json!(["edge+c01", "edge+c02", "edge+c04"])
    );
    let holding: Vec<usize> = (0..12).filter(|&i| fleet.replicas(i).is_some()).collect();
    assert_eq!(holding, [2, 6, 11]);
}
