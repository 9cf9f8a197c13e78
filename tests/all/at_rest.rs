//! A fleet at rest: once every object is applied and ready, wasmco asks
//! its clusters nothing beyond the probes and its watches (whose restarts
//! are the watch's own) until the resync's schedule comes round.

use std::time::Duration;

use serde_json::{Value, json};

use crate::deploy::action;
use crate::hosts::{lab_with, virtual_clusters};
use crate::support::clusters::{approved_dig, composite_app_with, settled_reconciles};
use crate::support::server::{Server, expect};
use crate::support::wait::wait_until;

const CLUSTERS: usize = 100;
const PROBE_SECONDS: u64 = 10;
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

#[test]
fn a_settled_fleet_of_100_clusters_is_only_probed_and_watched() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, CLUSTERS, Duration::ZERO);
    let data = tempfile::tempdir().unwrap();
    let probe = format!("{PROBE_SECONDS}s");
    let server = Server::start_with(
        data.path(),
        &["--probe-interval", &probe, "--resync-interval", "5m"],
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
    // Ready is not yet at rest: the reconcile still looks on every cluster
    // for objects to remove. The window opens once it has settled.
    wait_until("the reconcile to settle", Duration::from_secs(120), || {
        settled_reconciles(&server) >= 1
    });
    std::thread::sleep(Duration::from_secs(2));
    let total = || {
        clusters
            .iter()
            .map(wasmco_vcluster::VirtualCluster::requests)
            .sum::<wasmco_vcluster::Requests>()
    };
    let before = total();
    std::thread::sleep(WINDOW);
    let sent = total() - before;
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
