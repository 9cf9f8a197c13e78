//! Filling a resource database directly, for benchmarks that need inputs
//! without going through HTTP.

// Each bench is its own crate and uses part of this.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_store::db::{ResourceDb, ResourceId, Write};

/// Stores a resource of `kind` at `path` (its name is its own path value),
/// with `spec` and an optional multipart `file`.
pub fn create(db: &ResourceDb, kind: Kind, path: &[&str], spec: Value, file: Option<Vec<u8>>) {
    let name = path.get(kind.parent_arity()).copied().unwrap_or_default();
    let body = if kind == Kind::ClusterLabel {
        json!({ "clusterLabel": name })
    } else {
        json!({"metadata": {"name": name}, "spec": spec})
    };
    let id = ResourceId::new(kind, path.iter().map(|s| s.to_string()).collect());
    db.create(
        &id,
        Write {
            body,
            references: Vec::new(),
            file,
        },
    )
    .expect("create");
}

/// What the GET benchmarks read: provider `edge` with 100 clusters
/// (`cluster-000` …), project `p` with composite app `ca` v1.
pub fn populate_for_gets(db: &ResourceDb) {
    create(db, Kind::ClusterProvider, &["edge"], json!({}), None);
    for i in 0..100 {
        let name = format!("cluster-{i:03}");
        create(db, Kind::Cluster, &["edge", &name], json!({}), None);
    }
    create(db, Kind::Project, &["p"], json!({}), None);
    create(
        db,
        Kind::CompositeApp,
        &["p", "ca", "v1"],
        json!({"compositeAppVersion": "v1"}),
        None,
    );
}

/// Registers provider `edge` with one cluster per kubeconfig, `v00`, `v01`,
/// …, each labelled `edge`.
pub fn edge_clusters(db: &ResourceDb, kubeconfigs: &[String]) {
    create(db, Kind::ClusterProvider, &["edge"], json!({}), None);
    for (i, kubeconfig) in kubeconfigs.iter().enumerate() {
        let name = format!("v{i:02}");
        create(
            db,
            Kind::Cluster,
            &["edge", &name],
            json!({}),
            Some(kubeconfig.clone().into_bytes()),
        );
        create(
            db,
            Kind::ClusterLabel,
            &["edge", &name, "edge"],
            json!({}),
            None,
        );
    }
}

/// Project `project` with one app, `cfg`, of `manifests`, and an approved
/// DIG `d` placing it on every cluster labelled `label` of provider `edge`.
pub fn approved_dig(
    orchestrator: &wasmco_orchestrator::Orchestrator,
    db: &ResourceDb,
    project: &str,
    label: &str,
    manifests: String,
) -> wasmco_orchestrator::DigRef {
    let path = |rest: &[&str]| -> Vec<String> {
        [project, "ca", "v1"]
            .iter()
            .chain(rest)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let put = |kind: Kind, rest: &[&str], spec: Value, file: Option<Vec<u8>>| {
        let path = path(rest);
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        create(db, kind, &path, spec, file);
    };
    create(db, Kind::Project, &[project], json!({}), None);
    put(
        Kind::CompositeApp,
        &[],
        json!({"compositeAppVersion": "v1"}),
        None,
    );
    put(Kind::App, &["cfg"], json!({}), Some(manifests.into_bytes()));
    put(Kind::CompositeProfile, &["prof"], json!({}), None);
    put(
        Kind::DeploymentIntentGroup,
        &["d"],
        json!({"compositeProfile": "prof", "version": "r1"}),
        None,
    );
    put(Kind::GenericPlacementIntent, &["d", "gpi"], json!({}), None);
    let intent = json!({"app": "cfg", "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": label}]}});
    put(Kind::GenericAppIntent, &["d", "gpi", "cfg"], intent, None);
    put(
        Kind::DigIntent,
        &["d", "i"],
        json!({"intent": {"genericPlacementIntent": "gpi"}}),
        None,
    );
    let dig = wasmco_orchestrator::DigRef {
        project: project.into(),
        composite_app: "ca".into(),
        version: "v1".into(),
        name: "d".into(),
    };
    orchestrator.approve(&dig).expect("approve");
    dig
}

/// Replaces app `cfg`'s manifests in `project`.
pub fn replace_manifests(db: &ResourceDb, project: &str, manifests: String) {
    let id = ResourceId::new(
        Kind::App,
        [project, "ca", "v1", "cfg"].map(str::to_owned).to_vec(),
    );
    let body = db.get(&id).expect("the app");
    db.update(
        &id,
        Write {
            body,
            references: Vec::new(),
            file: Some(manifests.into_bytes()),
        },
    )
    .expect("update");
}

/// `count` ConfigMaps `{prefix}-NNN` as one YAML stream, each with `data`.
pub fn config_maps(prefix: &str, count: usize, data: &Value) -> String {
    (0..count)
        .map(|i| {
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{prefix}-{i:03}"), "namespace": "default"},
                "data": data});
            format!("---\n{}", serde_norway::to_string(&object).expect("yaml"))
        })
        .collect()
}

/// Waits until every resource of `dig`'s current revision is recorded
/// Applied (`total` of them).
pub fn wait_applied(
    orchestrator: &wasmco_orchestrator::Orchestrator,
    dig: &wasmco_orchestrator::DigRef,
    total: usize,
) {
    wait_all(
        orchestrator,
        dig,
        wasmco_store::appcontext::Deployed::Applied,
        total,
    );
}

/// Waits until all `total` resources of `dig`'s current revision are
/// recorded as `deployed`.
pub fn wait_all(
    orchestrator: &wasmco_orchestrator::Orchestrator,
    dig: &wasmco_orchestrator::DigRef,
    deployed: wasmco_store::appcontext::Deployed,
    total: usize,
) {
    let started = std::time::Instant::now();
    loop {
        let (_, synced) = orchestrator.status(dig).expect("status");
        let applied = synced.map_or(0, |s| {
            s.statuses
                .values()
                .filter(|r| r.deployed == deployed)
                .count()
        });
        if applied == total {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(600),
            "rsync did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Virtual clusters in this process, registered as provider `edge`'s
/// clusters labelled `edge` with a server over sled whose rsync deploys
/// to them.
pub struct EdgeFleet {
    pub runtime: tokio::runtime::Runtime,
    pub clusters: Vec<wasmco_vcluster::VirtualCluster>,
    pub state: wasmco_api::AppState,
    _data: tempfile::TempDir,
}

impl EdgeFleet {
    /// `count` clusters (see [`virtual_clusters`] and [`edge_clusters`]).
    pub fn start(count: usize) -> EdgeFleet {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let clusters = virtual_clusters(&runtime, count);
        let data = tempfile::tempdir().expect("temp dir");
        let rsync = wasmco_rsync::RsyncConfig::default();
        let state = wasmco::startup::open_state(
            data.path(),
            Some((runtime.handle().clone(), rsync)),
            Default::default(),
        )
        .expect("state");
        let kubeconfigs: Vec<String> = clusters
            .iter()
            .map(wasmco_vcluster::VirtualCluster::kubeconfig)
            .collect();
        edge_clusters(&state.db, &kubeconfigs);
        EdgeFleet {
            runtime,
            clusters,
            state,
            _data: data,
        }
    }
}

/// `count` virtual clusters, `v00`, `v01`, …, in this process.
pub fn virtual_clusters(
    runtime: &tokio::runtime::Runtime,
    count: usize,
) -> Vec<wasmco_vcluster::VirtualCluster> {
    runtime.block_on(async {
        let mut clusters = Vec::new();
        for i in 0..count {
            let listen = "127.0.0.1:0".parse().expect("addr");
            let cluster = wasmco_vcluster::VirtualCluster::start(
                &format!("v{i:02}"),
                listen,
                wasmco_vcluster::Behaviour::default(),
            )
            .await
            .expect("virtual cluster");
            clusters.push(cluster);
        }
        clusters
    })
}

/// Apps in the scale scenario, and resources per app.
pub const APPS: usize = 10;
pub const RESOURCES: usize = 5;

/// `v` followed by `extra`.
pub fn with<'a>(v: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    v.iter().chain(extra).copied().collect()
}

pub fn manifests(app: usize) -> Vec<u8> {
    let mut yaml = String::new();
    for r in 0..RESOURCES {
        yaml.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: app{app}-part{r}, labels: {{app: app{app}}}}}\n\
             spec:\n  replicas: 1\n  selector: {{matchLabels: {{app: app{app}-part{r}}}}}\n  template:\n    metadata: {{labels: {{app: app{app}-part{r}}}}}\n    \
             spec: {{containers: [{{name: main, image: \"registry.example/app{app}/part{r}:1.0\", ports: [{{containerPort: 8080}}]}}]}}\n"
        ));
    }
    yaml.into_bytes()
}

/// The scale scenario's inputs: `clusters` clusters labelled `edge`, the
/// built-in gac, and DIG `p/ca/v1/dig` of [`APPS`] apps of [`RESOURCES`]
/// Deployments each on every cluster (one customised per app, once more on
/// one cluster), approved.
pub fn approved_dig_at_scale(
    state: &wasmco_api::AppState,
    clusters: usize,
) -> wasmco_orchestrator::DigRef {
    let db = &state.db;
    create(db, Kind::ClusterProvider, &["edge"], json!({}), None);
    let kubeconfig = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/kubeconfig.yaml"
    ))
    .expect("fixture");
    for i in 0..clusters {
        let name = format!("c{i:05}");
        create(
            db,
            Kind::Cluster,
            &["edge", &name],
            json!({}),
            Some(kubeconfig.clone()),
        );
        create(
            db,
            Kind::ClusterLabel,
            &["edge", &name, "edge"],
            json!({}),
            None,
        );
    }
    let gac = wasmco_runtime::builtin::builtin("gac").expect("gac").wasm;
    create(
        db,
        Kind::Controller,
        &["gac"],
        json!({"type": "action", "priority": 10}),
        Some(gac.to_vec()),
    );
    let controller = state
        .runtime
        .load(
            "gac",
            wasmco_runtime::ControllerKind::Action,
            gac,
            &wasmco_runtime::LimitOverrides::default(),
        )
        .expect("gac loads");
    state.controllers.insert(controller);
    create(db, Kind::Project, &["p"], json!({}), None);
    let v = ["p", "ca", "v1"];
    create(
        db,
        Kind::CompositeApp,
        &v,
        json!({"compositeAppVersion": "v1"}),
        None,
    );
    let apps: Vec<String> = (0..APPS).map(|a| format!("app{a}")).collect();
    for (a, app) in apps.iter().enumerate() {
        create(
            db,
            Kind::App,
            &with(&v, &[app]),
            json!({}),
            Some(manifests(a)),
        );
    }
    create(
        db,
        Kind::CompositeProfile,
        &with(&v, &["prof"]),
        json!({}),
        None,
    );
    create(
        db,
        Kind::DeploymentIntentGroup,
        &with(&v, &["dig"]),
        json!({"compositeProfile": "prof", "version": "r1"}),
        None,
    );
    create(
        db,
        Kind::GenericPlacementIntent,
        &with(&v, &["dig", "gpi"]),
        json!({}),
        None,
    );
    for app in &apps {
        let intent = json!({"app": app, "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]}});
        create(
            db,
            Kind::GenericAppIntent,
            &with(&v, &["dig", "gpi", app]),
            intent,
            None,
        );
    }
    let customizations: Vec<serde_json::Value> = apps
        .iter()
        .flat_map(|app| {
            let target = json!({"kind": "Deployment", "name": format!("{app}-part0")});
            [
                json!({"app": app, "target": target, "patchType": "merge", "patch": {"spec": {"replicas": 3}}}),
                json!({"app": app, "target": target, "patchType": "merge", "patch": {"spec": {"replicas": 5}},
                       "clusterInfo": {"scope": "name", "clusterProvider": "edge", "cluster": "c00000"}}),
            ]
        })
        .collect();
    create(
        db,
        Kind::ControllerIntent,
        &with(&v, &["dig", "scale"]),
        json!({ "customizations": customizations }),
        None,
    );
    create(
        db,
        Kind::DigIntent,
        &with(&v, &["dig", "intents"]),
        json!({"intent": {"genericPlacementIntent": "gpi", "gac": "scale"}}),
        None,
    );
    let dig = wasmco_orchestrator::DigRef {
        project: "p".into(),
        composite_app: "ca".into(),
        version: "v1".into(),
        name: "dig".into(),
    };
    state.orchestrator.approve(&dig).expect("approve");
    dig
}

/// What one load phase measured.
pub struct Phase {
    pub requests: u64,
    pub elapsed: Duration,
    pub p50: Duration,
    pub p99: Duration,
}

impl Phase {
    /// Requests per second.
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

/// GETs `path` over `connections` keep-alive HTTP/1.1 connections for
/// `phase`, each answer expected 200.
pub async fn load(
    connections: usize,
    phase: Duration,
    addr: std::net::SocketAddr,
    path: &'static str,
    token: String,
) -> Phase {
    let deadline = Instant::now() + phase;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .expect("handshake");
            tokio::spawn(connection);
            let mut latencies = Vec::with_capacity(100_000);
            while Instant::now() < deadline {
                let request = hyper::Request::get(path)
                    .header("host", "bench")
                    .header("authorization", token.as_str())
                    .body(Empty::<Bytes>::new())
                    .expect("request");
                let sent = Instant::now();
                let response = sender.send_request(request).await.expect("response");
                assert_eq!(response.status(), 200);
                response.into_body().collect().await.expect("body");
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("load task"));
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Phase {
        requests: latencies.len() as u64,
        elapsed,
        p50: latencies[latencies.len() / 2],
        p99: latencies[latencies.len() * 99 / 100],
    }
}

/// Serves `state`'s API on a loopback port from a runtime of one worker
/// thread (as `wasmco serve` would), for as long as the runtime lives.
pub fn serve(state: wasmco_api::AppState) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let listener = server
        .block_on(wasmco::startup::bind("127.0.0.1:0".parse().expect("addr")))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    server.spawn(async move { wasmco::startup::serve(state, listener).await });
    (server, addr)
}

/// A server over sled holding [`populate_for_gets`]' resources, serving
/// from its own runtime, with a runtime for the client that loads it.
pub struct GetTarget {
    pub addr: std::net::SocketAddr,
    /// `Bearer <admin token>`.
    pub token: String,
    pub client: tokio::runtime::Runtime,
    _server: tokio::runtime::Runtime,
    _data: tempfile::TempDir,
}

pub fn serve_for_gets() -> GetTarget {
    let data = tempfile::tempdir().expect("temp dir");
    let state = wasmco::startup::open_state(data.path(), None, Default::default()).expect("state");
    let token = format!("Bearer {}", state.admin_token);
    populate_for_gets(&state.db);
    let (server, addr) = serve(state);
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    GetTarget {
        addr,
        token,
        client,
        _server: server,
        _data: data,
    }
}

/// The machine's load averages (1, 5, 15 minutes), for a bench to print
/// beside its figures.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
