//! rsync's apply throughput against virtual clusters, in one run: rsync, a
//! raw concurrent HTTP client sending the same server-side-apply PATCHes,
//! and `kubectl apply --server-side` run serially.
//!
//! `cargo bench -p wasmco --bench rsync`

use std::time::Instant;

use futures_util::StreamExt;
use serde_json::{Value, json};

mod support;

use support::{approved_dig, wait_applied};

const CLUSTERS: usize = 50;
const OBJECTS: usize = 100;
const KUBECTL_CLUSTERS: usize = 3;
const KUBECTL_SINGLE: usize = 30;

fn config_map(prefix: &str, i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("{prefix}-{i:03}"), "namespace": "default"},
           "data": {"index": i.to_string(), "payload": "x".repeat(200)}})
}

fn main() {
    let support::EdgeFleet {
        runtime,
        clusters,
        state,
        ..
    } = support::EdgeFleet::start(CLUSTERS);
    let db = &state.db;
    let manifests: String = (0..OBJECTS)
        .map(|i| {
            format!(
                "---\n{}\n",
                serde_norway::to_string(&config_map("rsync", i)).expect("yaml")
            )
        })
        .collect();
    let dig = approved_dig(&state.orchestrator, db, "p", "edge", manifests);

    let total = CLUSTERS * OBJECTS;
    println!(
        "{total} ConfigMaps over {CLUSTERS} virtual clusters (in this process, sharing its 2 cores):"
    );

    // rsync: from the instantiate request until every object is recorded Applied.
    let started = Instant::now();
    state
        .orchestrator
        .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
        .expect("instantiate");
    wait_applied(&state.orchestrator, &dig, total);
    let rsync = total as f64 / started.elapsed().as_secs_f64();

    // The same PATCHes from a plain concurrent client (other names: creates, as rsync's were).
    let client = reqwest::Client::new();
    let requests: Vec<(String, String)> = clusters
        .iter()
        .flat_map(|cluster| {
            (0..OBJECTS).map(move |i| {
                let object = config_map("raw", i);
                let url = format!(
                    "http://{}/api/v1/namespaces/default/configmaps/{}?fieldManager=bench&force=true",
                    cluster.addr(),
                    object["metadata"]["name"].as_str().unwrap_or_default()
                );
                (url, object.to_string())
            })
        })
        .collect();
    let started = Instant::now();
    runtime.block_on(async {
        futures_util::stream::iter(requests)
            .map(|(url, body)| {
                let client = client.clone();
                async move {
                    let response = client
                        .patch(url)
                        .header("content-type", "application/apply-patch+yaml")
                        .body(body)
                        .send()
                        .await
                        .expect("patch");
                    assert!(response.status().is_success());
                }
            })
            .buffer_unordered(64)
            .collect::<Vec<()>>()
            .await;
    });
    let raw = total as f64 / started.elapsed().as_secs_f64();

    // kubectl, serially, on a few clusters (it is slow; the rate is what counts).
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("objects.yaml");
    let docs: String = (0..OBJECTS)
        .map(|i| {
            format!(
                "---\n{}\n",
                serde_norway::to_string(&config_map("kubectl", i)).expect("yaml")
            )
        })
        .collect();
    std::fs::write(&file, docs).expect("write");
    let started = Instant::now();
    let mut kubectl_ok = true;
    for (i, cluster) in clusters.iter().take(KUBECTL_CLUSTERS).enumerate() {
        let config = dir.path().join(format!("kubeconfig-{i}"));
        cluster.write_kubeconfig(&config).expect("kubeconfig");
        let status = std::process::Command::new("kubectl")
            .args(["apply", "--server-side", "--validate=false", "-f"])
            .arg(&file)
            .env("KUBECONFIG", &config)
            .stdout(std::process::Stdio::null())
            .status();
        kubectl_ok &= status.map(|s| s.success()).unwrap_or(false);
    }
    let kubectl = (KUBECTL_CLUSTERS * OBJECTS) as f64 / started.elapsed().as_secs_f64();
    // And one object per kubectl run, as a script looping over manifests does.
    let config = dir.path().join("kubeconfig-single");
    clusters[0].write_kubeconfig(&config).expect("kubeconfig");
    let started = Instant::now();
    for i in 0..KUBECTL_SINGLE {
        let single = dir.path().join(format!("single-{i}.yaml"));
        std::fs::write(
            &single,
            serde_norway::to_string(&config_map("single", i)).expect("yaml"),
        )
        .expect("write");
        let status = std::process::Command::new("kubectl")
            .args(["apply", "--server-side", "--validate=false", "-f"])
            .arg(&single)
            .env("KUBECONFIG", &config)
            .stdout(std::process::Stdio::null())
            .status();
        kubectl_ok &= status.map(|s| s.success()).unwrap_or(false);
    }
    let kubectl_single = KUBECTL_SINGLE as f64 / started.elapsed().as_secs_f64();

    println!("  rsync:                      {rsync:>8.0} objects/s");
    println!("  raw concurrent HTTP client: {raw:>8.0} objects/s");
    println!(
        "  rsync / raw:                {:>8.2} (target >= 0.8)",
        rsync / raw
    );
    if kubectl_ok {
        println!("  kubectl apply, one run per object, serially: {kubectl_single:>6.0} objects/s");
        println!(
            "  rsync / that:               {:>8.1} (target >= 20)",
            rsync / kubectl_single
        );
        println!(
            "  kubectl apply, one run per cluster's {OBJECTS}-object file, serially: {kubectl:>6.0} objects/s"
        );
        println!("  rsync / that:               {:>8.1}", rsync / kubectl);
    } else {
        println!("  kubectl apply failed or is missing (Debian: kubernetes-client); no comparison");
    }
}
