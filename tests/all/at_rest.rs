//! A fleet at rest: once every object is applied and ready, wasmco asks
//! its clusters nothing beyond the probes and its watches (whose restarts
//! are the watch's own); the resyncs that come round meanwhile read
//! nothing the watches vouch for.

use std::time::Duration;

use serde_json::{Value, json};

use crate::deploy::action;
use crate::hosts::{lab_with, virtual_clusters};
use crate::support::clusters::{approved_dig, composite_app_with, counter, settled_reconciles};
use crate::support::server::{Server, expect};
use crate::support::wait::wait_until;

const CLUSTERS: usize = 100;
const PROBE_SECONDS: u64 = 10;
const RESYNC_SECONDS: u64 = 10;
const WINDOW: Duration = Duration::from_secs(60);

/// A ConfigMap, a Secret and a Deployment: three kinds watched per cluster.
fn manifests() -> String {
    [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rest"},
               "data": {"at": "rest"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "rest"},
               "stringData": {"token": "t"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "rest"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rest"}},
                        "template": {"metadata": {"labels": {"app": "rest"}},
                                     "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}),
    ]
    .iter()
    .map(|o| format!("---\n{}", serde_norway::to_string(o).unwrap()))
    .collect()
}

fn count(server: &Server, dig: &str, query: &str, field: &str, value: &str) -> u64 {
    let answer: Value = expect(server.get(&format!("{dig}/status?{query}")), 200);
    answer[field][value].as_u64().unwrap_or(0)
}

fn looks_skipped(server: &Server) -> u64 {
    counter(server, "wasmco_rsync_resync_looks_skipped_total")
}

#[test]
fn a_settled_fleet_of_100_clusters_is_only_probed_and_watched() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, CLUSTERS, Duration::ZERO);
    let data = tempfile::tempdir().unwrap();
    let (probe, resync) = (format!("{PROBE_SECONDS}s"), format!("{RESYNC_SECONDS}s"));
    let server = Server::start_with(
        data.path(),
        &["--probe-interval", &probe, "--resync-interval", &resync],
    );
    lab_with(&server, &clusters);
    let ca = composite_app_with(&server, "p", "rest", &[("app", manifests())]);
    let everywhere = json!({"allOf": [{"clusterProvider": "lab", "clusterLabel": "edge"}]});
    let dig = approved_dig(&server, &ca, &[("app", everywhere)]);
    expect(action(&server, &dig, "instantiate"), 202);
    let objects = CLUSTERS as u64 * 3;
    wait_until(
        "every object Applied and Ready",
        Duration::from_secs(120),
        || {
            count(&server, &dig, "output=summary", "deployedCounts", "Applied") == objects
                && count(
                    &server,
                    &dig,
                    "status=ready&output=summary",
                    "readyCounts",
                    "Ready",
                ) == objects
        },
    );
    // Ready is not yet at rest: the instantiate's reconcile still looks on
    // every cluster for objects to remove (it reads everything: the first
    // of the reads counted here), and the resyncs after it read the
    // objects again until their watches vouch for them (on a loaded
    // machine a watch's first list may end after the first resync). Every
    // sixth resync reads everything by design (the second); the window
    // opens right after it, so that it ends before the next (seven
    // resyncs of at least 10 s later) and has only watched resyncs in it.
    let reads_all = || counter(&server, "wasmco_rsync_reads_all_total");
    wait_until(
        "the sixth resync to read everything",
        Duration::from_secs(180),
        || reads_all() >= 2,
    );
    std::thread::sleep(Duration::from_secs(1));
    let total = || {
        clusters
            .iter()
            .map(wasmco_vcluster::VirtualCluster::requests)
            .sum::<wasmco_vcluster::Requests>()
    };
    let (before, resyncs, skipped) = (total(), settled_reconciles(&server), looks_skipped(&server));
    let read_all = reads_all();
    std::thread::sleep(WINDOW);
    let sent = total() - before;
    assert_eq!(
        reads_all(),
        read_all,
        "a resync read everything in the window"
    );
    let resyncs = settled_reconciles(&server) - resyncs;
    let skipped = looks_skipped(&server) - skipped;
    let expected = WINDOW.as_secs() / RESYNC_SECONDS / 2;
    assert!(resyncs >= expected, "{resyncs} resyncs in the window");
    // Each skips the app's objects and the clean-up on every cluster (one
    // may have skipped before the window, and ended in it).
    assert!(
        skipped >= (resyncs - 1) * 2 * CLUSTERS as u64,
        "{skipped} looks skipped in {resyncs} resyncs"
    );
    assert_eq!(
        sent.others(),
        0,
        "at rest, wasmco read or wrote on the clusters: {sent:?}"
    );
    // Each watch may have been renewed once (its timeout is the server's),
    // never one per object or per status.
    assert!(
        sent.watches <= CLUSTERS as u64 * 3,
        "watches reopened: {sent:?}"
    );
    let probes = CLUSTERS as u64 * WINDOW.as_secs() / PROBE_SECONDS;
    assert!(
        sent.version >= probes / 2 && sent.version <= probes + CLUSTERS as u64 * 2,
        "{probes} probes expected: {sent:?}"
    );
}

/// At rest a resync reads nothing, so what the watches see is all there
/// is: a workload whose status says it stopped being ready is recorded
/// NotReady, though its status updates are no drift.
#[test]
fn a_workload_that_stops_being_ready_at_rest_is_recorded_so() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, 2, Duration::ZERO);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--resync-interval", "1h"]);
    lab_with(&server, &clusters);
    let ca = composite_app_with(&server, "p", "unready", &[("app", manifests())]);
    let everywhere = json!({"allOf": [{"clusterProvider": "lab", "clusterLabel": "edge"}]});
    let dig = approved_dig(&server, &ca, &[("app", everywhere)]);
    expect(action(&server, &dig, "instantiate"), 202);
    let ready = || {
        count(
            &server,
            &dig,
            "status=ready&output=summary",
            "readyCounts",
            "Ready",
        )
    };
    wait_until("every object Ready", Duration::from_secs(60), || {
        ready() == 6
    });
    // And the resync that follows, after which nothing reads the clusters.
    wait_until("the resync after it", Duration::from_secs(60), || {
        settled_reconciles(&server) >= 2
    });
    // The cluster makes it ready no more, and reports it unavailable.
    clusters[0].set_behaviour(wasmco_vcluster::Behaviour {
        ready_after: Duration::from_secs(3600),
        ..Default::default()
    });
    let status = format!(
        "http://{}/apis/apps/v1/namespaces/default/deployments/rest/status",
        clusters[0].addr()
    );
    let patched = reqwest::blocking::Client::new()
        .patch(&status)
        .header("Content-Type", "application/merge-patch+json")
        .body(json!({"status": {"replicas": 1, "availableReplicas": 0}}).to_string())
        .send()
        .unwrap();
    assert_eq!(patched.status(), 200);
    wait_until(
        "the Deployment recorded NotReady",
        Duration::from_secs(10),
        || ready() == 5,
    );
}
