//! rsync as a reconciler, in one run:
//!
//! - an update storm: 100 updates of one DIG in a burst over 50 virtual
//!   clusters; the clusters must end at the last revision, and the writes
//!   they took show whether superseded revisions piled up;
//! - drift: objects deleted on 50 clusters (100 objects each) and the time
//!   until rsync puts each back (found by its watches; the resync interval
//!   is set longer than the bench);
//! - against a real kube-apiserver (built by `tests/kube/build.sh`): 1,000
//!   ConfigMaps in one app on one cluster, against `kubectl apply
//!   --server-side` of the same objects in one file, and 8 such kubectl
//!   processes in parallel.
//!
//! `cargo bench -p wasmco --bench reconcile`

use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "../../../tests/all/kube_apiserver.rs"]
mod kube_apiserver;
mod support;

use support::{
    approved_dig, config_maps, edge_clusters, replace_manifests, wait_all, wait_applied,
};
use wasmco::startup;
use wasmco_api::AppState;
use wasmco_rsync::RsyncConfig;
use wasmco_store::appcontext::Deployed;
use wasmco_vcluster::VirtualCluster;

const CLUSTERS: usize = 50;
const STORM_OBJECTS: usize = 20;
const UPDATES: usize = 100;
const DRIFT_OBJECTS: usize = 100;
const DRIFT_SAMPLES: usize = 50;
/// Long enough that the resync never repairs what the bench deletes: the
/// watch must.
const RESYNC: Duration = Duration::from_secs(120);
const REAL_OBJECTS: usize = 1000;
const KUBECTL_PROCESSES: usize = 8;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let clusters = support::virtual_clusters(&runtime, CLUSTERS);
    let real = kube_apiserver::ApiServer::shared();
    let data = tempfile::tempdir().expect("temp dir");
    let config = RsyncConfig {
        resync: RESYNC,
        ..RsyncConfig::default()
    };
    let state = startup::open_state(
        data.path(),
        Some((runtime.handle().clone(), config)),
        Default::default(),
    )
    .expect("state");
    let mut kubeconfigs: Vec<String> = clusters.iter().map(VirtualCluster::kubeconfig).collect();
    kubeconfigs.push(String::from_utf8_lossy(&real.kubeconfig).into_owned());
    edge_clusters(&state.db, &kubeconfigs);
    // The real server is the last cluster; only it carries this label.
    support::create(
        &state.db,
        wasmco_core::Kind::ClusterLabel,
        &["edge", &format!("v{CLUSTERS:02}"), "real"],
        json!({}),
        None,
    );
    let virtual_label = |i: usize| format!("v{i:02}");
    for i in 0..CLUSTERS {
        support::create(
            &state.db,
            wasmco_core::Kind::ClusterLabel,
            &["edge", &virtual_label(i), "virtual"],
            json!({}),
            None,
        );
    }

    update_storm(&runtime, &state, &clusters);
    drift(&runtime, &state, &clusters);
    against_kubectl(&state, real);
}

fn update_storm(runtime: &tokio::runtime::Runtime, state: &AppState, clusters: &[VirtualCluster]) {
    let dig = approved_dig(
        &state.orchestrator,
        &state.db,
        "storm",
        "virtual",
        config_maps("storm", STORM_OBJECTS, &json!({"rev": "0"})),
    );
    state
        .orchestrator
        .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
        .expect("instantiate");
    let total = CLUSTERS * STORM_OBJECTS;
    wait_applied(&state.orchestrator, &dig, total);
    let writes = || clusters.iter().map(VirtualCluster::writes).sum::<u64>();
    let before = writes();

    let started = Instant::now();
    for rev in 1..=UPDATES {
        let data = json!({"rev": rev.to_string()});
        replace_manifests(
            &state.db,
            "storm",
            config_maps("storm", STORM_OBJECTS, &data),
        );
        state
            .orchestrator
            .update(&dig, wasmco_orchestrator::Actor::Admin)
            .expect("update");
    }
    let burst = started.elapsed();
    let last = UPDATES.to_string();
    let client = reqwest::Client::new();
    runtime.block_on(async {
        loop {
            let mut done = true;
            for cluster in clusters {
                let url = format!(
                    "http://{}/api/v1/namespaces/default/configmaps?labelSelector=wasmco.io/app=cfg",
                    cluster.addr()
                );
                let list: Value = client
                    .get(url)
                    .send()
                    .await
                    .expect("list")
                    .json()
                    .await
                    .expect("json");
                let items = list["items"].as_array().cloned().unwrap_or_default();
                let storm: Vec<&Value> = items
                    .iter()
                    .filter(|o| o["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("storm-")))
                    .collect();
                if storm.len() != STORM_OBJECTS || storm.iter().any(|o| o["data"]["rev"] != last) {
                    done = false;
                    break;
                }
            }
            if done {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(600), "the storm did not converge");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let converged = started.elapsed();
    let per_object = (writes() - before) as f64 / total as f64;
    println!(
        "Update storm: {UPDATES} updates of one DIG, {total} ConfigMaps over {CLUSTERS} virtual clusters"
    );
    println!(
        "  the {UPDATES} update calls took          {:>8.2} s",
        burst.as_secs_f64()
    );
    println!(
        "  every cluster at the last revision after {:>8.2} s",
        converged.as_secs_f64()
    );
    println!(
        "  writes per object:                     {per_object:>8.1} (one per revision would be {UPDATES}; bounded by the work, not the updates)"
    );
    // Gone before the next measurement, so its deletes do not share its cores.
    state.orchestrator.terminate(&dig).expect("terminate");
    wait_all(&state.orchestrator, &dig, Deployed::Deleted, total);
}

fn drift(runtime: &tokio::runtime::Runtime, state: &AppState, clusters: &[VirtualCluster]) {
    let dig = approved_dig(
        &state.orchestrator,
        &state.db,
        "drift",
        "virtual",
        config_maps("drift", DRIFT_OBJECTS, &json!({"k": "v"})),
    );
    state
        .orchestrator
        .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
        .expect("instantiate");
    wait_applied(&state.orchestrator, &dig, CLUSTERS * DRIFT_OBJECTS);
    // The watches start once a cluster's applies are done; let them list.
    std::thread::sleep(Duration::from_secs(2));
    let client = reqwest::Client::new();
    let samples: Vec<Duration> = runtime.block_on(async {
        let mut repairs = tokio::task::JoinSet::new();
        for sample in 0..DRIFT_SAMPLES {
            let cluster = clusters[sample % CLUSTERS].addr();
            let url = format!(
                "http://{cluster}/api/v1/namespaces/default/configmaps/drift-{:03}",
                (sample * 7) % DRIFT_OBJECTS
            );
            let client = client.clone();
            repairs.spawn(async move {
                let deleted = client.delete(&url).send().await.expect("delete");
                assert!(deleted.status().is_success());
                let started = Instant::now();
                loop {
                    let found = client.get(&url).send().await.expect("get");
                    if found.status().is_success() {
                        return started.elapsed();
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(120),
                        "never repaired"
                    );
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            // One every 40 ms.
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        repairs.join_all().await
    });
    let mut samples = samples;
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "Drift: {DRIFT_SAMPLES} objects deleted on {CLUSTERS} clusters of {DRIFT_OBJECTS} objects each, resync every {RESYNC:?}"
    );
    println!(
        "  deletion to repair, median:            {:>8.2} s",
        at(0.5).as_secs_f64()
    );
    println!(
        "  deletion to repair, p99:               {:>8.2} s",
        at(0.99).as_secs_f64()
    );
    println!(
        "  (target: p99 <= 1 s, found by the watch; the resync, every {RESYNC:?}, never came)"
    );
    state.orchestrator.terminate(&dig).expect("terminate");
    wait_all(
        &state.orchestrator,
        &dig,
        Deployed::Deleted,
        CLUSTERS * DRIFT_OBJECTS,
    );
}

fn kubectl_apply(real: &kube_apiserver::ApiServer, file: &std::path::Path) -> std::process::Child {
    std::process::Command::new(kube_apiserver::binaries().join("kubectl"))
        .args(["apply", "--server-side", "--field-manager=bench", "-f"])
        .arg(file)
        .env("KUBECONFIG", &real.kubeconfig_path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("kubectl")
}

fn against_kubectl(state: &AppState, real: &kube_apiserver::ApiServer) {
    let dig = approved_dig(
        &state.orchestrator,
        &state.db,
        "real",
        "real",
        config_maps("rsync", REAL_OBJECTS, &json!({"payload": "x".repeat(200)})),
    );
    let started = Instant::now();
    state
        .orchestrator
        .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
        .expect("instantiate");
    wait_applied(&state.orchestrator, &dig, REAL_OBJECTS);
    let rsync = REAL_OBJECTS as f64 / started.elapsed().as_secs_f64();

    let dir = tempfile::tempdir().expect("temp dir");
    let data = json!({"payload": "x".repeat(200)});
    let one = dir.path().join("one.yaml");
    std::fs::write(&one, config_maps("kubectl", REAL_OBJECTS, &data)).expect("write");
    let started = Instant::now();
    assert!(kubectl_apply(real, &one).wait().expect("kubectl").success());
    let kubectl = REAL_OBJECTS as f64 / started.elapsed().as_secs_f64();

    let per_process = REAL_OBJECTS / KUBECTL_PROCESSES;
    let files: Vec<_> = (0..KUBECTL_PROCESSES)
        .map(|p| {
            let file = dir.path().join(format!("part-{p}.yaml"));
            std::fs::write(&file, config_maps(&format!("part{p}"), per_process, &data))
                .expect("write");
            file
        })
        .collect();
    let started = Instant::now();
    let children: Vec<_> = files.iter().map(|f| kubectl_apply(real, f)).collect();
    for mut child in children {
        assert!(child.wait().expect("kubectl").success());
    }
    let parallel = (per_process * KUBECTL_PROCESSES) as f64 / started.elapsed().as_secs_f64();
    let best = kubectl.max(parallel);
    println!(
        "Against a real kube-apiserver (with etcd, same 2 cores): {REAL_OBJECTS} ConfigMaps on one cluster"
    );
    println!("  rsync:                                  {rsync:>8.0} objects/s");
    println!("  kubectl apply --server-side, one file:  {kubectl:>8.0} objects/s");
    println!(
        "  {KUBECTL_PROCESSES} such kubectl in parallel:             {parallel:>8.0} objects/s"
    );
    println!(
        "  rsync / the better kubectl:             {:>8.2} (target >= 0.9)",
        rsync / best
    );
}
