//! Filling a resource database directly, for benchmarks that need inputs
//! without going through HTTP.

// Each bench is its own crate and uses part of this.
#![allow(dead_code)]

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
