//! The same rsync scenarios against the virtual cluster and a real
//! kube-apiserver (with etcd), so that the virtual cluster is held to the
//! real server's behaviour. Every scenario ends by checking the status
//! against what the cluster holds: nothing is Applied that is not there,
//! nothing Deleted that is.
//!
//! "Ready" for kinds no controller acts on (ConfigMaps, Secrets, Services,
//! ServiceAccounts, Roles, custom objects) means the object exists as
//! applied; the real server here runs no controller-manager, so workloads
//! are not among these scenarios.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::deploy::action;
use crate::http::{Server, Virtual, doc, expect};
use crate::kube_apiserver::{ApiServer, kubectl};

/// A cluster to run a scenario on.
enum Cluster {
    Virtual(Virtual),
    Real(&'static ApiServer),
}

impl Cluster {
    fn virtual_cluster() -> Cluster {
        Cluster::Virtual(Virtual::start("solo"))
    }

    fn api_server() -> Cluster {
        Cluster::Real(ApiServer::shared())
    }

    fn kubeconfig(&self) -> (&[u8], &Path) {
        match self {
            Cluster::Virtual(v) => (&v.kubeconfig, &v.kubeconfig_path),
            Cluster::Real(r) => (&r.kubeconfig, &r.kubeconfig_path),
        }
    }

    fn kubectl(&self, args: &[&str]) -> String {
        let output = kubectl(self.kubeconfig().1, args);
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn kubectl_with_input(&self, args: &[&str], input: &str) {
        use std::io::Write;
        let mut child =
            std::process::Command::new(crate::kube_apiserver::binaries().join("kubectl"))
                .args(args)
                .env("KUBECONFIG", self.kubeconfig().1)
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The object, if the cluster holds it.
    fn get(&self, kind: &str, name: &str) -> Option<Value> {
        let text = self.kubectl(&[
            "get",
            kind,
            name,
            "--namespace=default",
            "--ignore-not-found",
            "--output=json",
        ]);
        (!text.trim().is_empty()).then(|| serde_json::from_str(&text).unwrap())
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One resource's status: (kind, name, deployed, ready, detail entry).
struct Row {
    kind: String,
    name: String,
    deployed: String,
    ready: String,
    detail: Value,
}

/// A wasmco server with one cluster, `solo`, and a DIG whose apps are the
/// given manifests, all placed on it.
struct Deployment {
    server: Server,
    data: tempfile::TempDir,
    project: String,
    dig: String,
}

const CA: &str = "composite-apps/ca/v1";

impl Deployment {
    fn new(cluster: &Cluster) -> Deployment {
        let data = tempfile::tempdir().unwrap();
        let server = Server::start_with(
            data.path(),
            &["--resync-interval", "1s", "--probe-interval", "1s"],
        );
        expect(
            server.post("/v2/cluster-providers", doc("lab", json!({}))),
            201,
        );
        expect(
            server.upload(
                "/v2/cluster-providers/lab/clusters",
                doc("solo", json!({})),
                Some(cluster.kubeconfig().0.to_vec()),
            ),
            201,
        );
        Deployment {
            server,
            data,
            project: String::new(),
            dig: String::new(),
        }
    }

    /// Project `project` with the apps (name, manifests), instantiated.
    fn instantiate(&mut self, project: &str, apps: &[(&str, String)]) -> String {
        let server = &self.server;
        expect(server.post("/v2/projects", doc(project, json!({}))), 201);
        let ca = format!("/v2/projects/{project}/{CA}");
        expect(
            server.post(
                &format!("/v2/projects/{project}/composite-apps"),
                doc("ca", json!({"compositeAppVersion": "v1"})),
            ),
            201,
        );
        for (app, manifests) in apps {
            expect(
                server.upload(
                    &format!("{ca}/apps"),
                    doc(app, json!({})),
                    Some(manifests.as_bytes().to_vec()),
                ),
                201,
            );
        }
        expect(
            server.post(&format!("{ca}/composite-profiles"), doc("prof", json!({}))),
            201,
        );
        let dig = format!("{ca}/deployment-intent-groups/d");
        expect(
            server.post(
                &format!("{ca}/deployment-intent-groups"),
                doc("d", json!({"compositeProfile": "prof", "version": "r1"})),
            ),
            201,
        );
        expect(
            server.post(
                &format!("{dig}/generic-placement-intents"),
                doc("gpi", json!({})),
            ),
            201,
        );
        for (app, _) in apps {
            let intent = json!({"app": app, "intent": {"allOf": [{"clusterProvider": "lab", "cluster": "solo"}]}});
            expect(
                server.post(
                    &format!("{dig}/generic-placement-intents/gpi/app-intents"),
                    doc(app, intent),
                ),
                201,
            );
        }
        expect(
            server.post(
                &format!("{dig}/intents"),
                doc("i", json!({"intent": {"genericPlacementIntent": "gpi"}})),
            ),
            201,
        );
        expect(action(server, &dig, "approve"), 202);
        expect(action(server, &dig, "instantiate"), 202);
        self.project = project.to_owned();
        self.dig = dig.clone();
        dig
    }

    /// `kill -9` and a start on the same data.
    fn restart(&mut self) {
        let killed = std::process::Command::new("kill")
            .args(["-9", &self.server.pid().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        // The old process is dead (its store lock gone); the assignment reaps it.
        self.server = Server::start_with(
            self.data.path(),
            &["--resync-interval", "1s", "--probe-interval", "1s"],
        );
    }

    fn rows(&self, dig: &str) -> Vec<Row> {
        let status = |which: &str| {
            expect(
                self.server
                    .get(&format!("{dig}/status?status={which}&output=detail")),
                200,
            )
        };
        let (deployed, ready) = (status("deployed"), status("ready"));
        let resources = |status: &Value| -> Vec<Value> {
            status["apps"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|app| app["clusters"].as_array().cloned().unwrap_or_default())
                .flat_map(|cluster| cluster["resources"].as_array().cloned().unwrap_or_default())
                .collect()
        };
        resources(&deployed)
            .into_iter()
            .zip(resources(&ready))
            .map(|(d, r)| Row {
                kind: d["GVK"]["Kind"].as_str().unwrap_or_default().to_owned(),
                name: d["name"].as_str().unwrap_or_default().to_owned(),
                deployed: d["deployedStatus"].as_str().unwrap_or_default().to_owned(),
                ready: r["readyStatus"].as_str().unwrap_or_default().to_owned(),
                detail: d,
            })
            .collect()
    }

    fn wait_until(&self, dig: &str, what: &str, done: impl Fn(&[Row]) -> bool) {
        wait_for(what, || done(&self.rows(dig)));
    }

    /// The status says nothing the cluster contradicts.
    fn check_against(&self, dig: &str, cluster: &Cluster) {
        for row in self.rows(dig) {
            let held = cluster.get(&row.kind, &row.name);
            match row.deployed.as_str() {
                "Applied" => assert!(
                    held.is_some(),
                    "{} {} is Applied but not there",
                    row.kind,
                    row.name
                ),
                "Deleted" => assert!(
                    held.is_none(),
                    "{} {} is Deleted but there",
                    row.kind,
                    row.name
                ),
                _ => {}
            }
        }
    }
}

fn config_map(name: &str, data: Value) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {data}\n---\n"
    )
}

fn all(rows: &[Row], deployed: &str, ready: &str) -> bool {
    !rows.is_empty()
        && rows
            .iter()
            .all(|r| r.deployed == deployed && r.ready == ready)
}

fn apply_update_and_terminate(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = match cluster {
        Cluster::Virtual(_) => "v",
        Cluster::Real(_) => "r",
    };
    let name = |n: &str| format!("life-{tag}-{n}");
    let manifests = [
        config_map(&name("a"), json!({"k": "1"})),
        config_map(&name("b"), json!({"k": "1"})),
        config_map(&name("c"), json!({"k": "1"})),
    ]
    .concat();
    let dig = deployment.instantiate(&format!("life{tag}"), &[("cfg", manifests)]);
    deployment.wait_until(&dig, "all applied and ready", |rows| {
        rows.len() == 3 && all(rows, "Applied", "Ready")
    });
    let a = cluster.get("configmap", &name("a")).expect("a is there");
    assert_eq!(a["data"]["k"], "1");
    assert_eq!(
        a["metadata"]["labels"]["wasmco.io/deployment-intent-group"],
        format!("life{tag}.ca.v1.d")
    );
    deployment.check_against(&dig, &cluster);

    // The update changes a and drops c.
    let updated = [
        config_map(&name("a"), json!({"k": "2"})),
        config_map(&name("b"), json!({"k": "1"})),
    ]
    .concat();
    let app = format!("/v2/projects/life{tag}/{CA}/apps/cfg");
    expect(
        deployment
            .server
            .replace_upload(&app, doc("cfg", json!({})), updated.into_bytes()),
        200,
    );
    expect(action(&deployment.server, &dig, "update"), 202);
    wait_for("c removed and a changed", || {
        cluster.get("configmap", &name("c")).is_none()
            && cluster.get("configmap", &name("a")).unwrap()["data"]["k"] == "2"
    });
    deployment.wait_until(&dig, "the update applied", |rows| {
        rows.len() == 2 && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);

    expect(action(&deployment.server, &dig, "terminate"), 202);
    deployment.wait_until(&dig, "everything deleted", |rows| {
        rows.iter().all(|r| r.deployed == "Deleted")
    });
    for n in ["a", "b", "c"] {
        assert!(cluster.get("configmap", &name(n)).is_none(), "{n} is left");
    }
    deployment.check_against(&dig, &cluster);
}

fn drift_is_repaired(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = match cluster {
        Cluster::Virtual(_) => "v",
        Cluster::Real(_) => "r",
    };
    let (deleted, edited) = (
        format!("drift-{tag}-deleted"),
        format!("drift-{tag}-edited"),
    );
    let manifests = [
        config_map(&deleted, json!({"k": "1"})),
        config_map(&edited, json!({"k": "1"})),
    ]
    .concat();
    let dig = deployment.instantiate(&format!("drift{tag}"), &[("cfg", manifests)]);
    deployment.wait_until(&dig, "applied", |rows| all(rows, "Applied", "Ready"));
    // Settled first: the first look after a start only learns what is there.
    std::thread::sleep(Duration::from_secs(2));

    cluster.kubectl(&["delete", "configmap", &deleted, "--namespace=default"]);
    cluster.kubectl(&[
        "patch",
        "configmap",
        &edited,
        "--namespace=default",
        "--type=merge",
        "--patch",
        r#"{"data":{"k":"tampered"}}"#,
    ]);
    wait_for("both put back", || {
        cluster.get("configmap", &deleted).is_some()
            && cluster.get("configmap", &edited).unwrap()["data"]["k"] == "1"
    });
    deployment.wait_until(&dig, "the drift recorded as repaired", |rows| {
        let drift = |name: &str| {
            rows.iter()
                .find(|r| r.name == name)
                .map(|r| r.detail["drift"].clone())
                .unwrap_or_default()
        };
        drift(&deleted)["kind"] == "Deleted"
            && drift(&edited)["kind"] == "Changed"
            && drift(&deleted)["repaired"].is_string()
            && drift(&edited)["repaired"].is_string()
    });
    assert!(all(&deployment.rows(&dig), "Applied", "Ready"));
    deployment.check_against(&dig, &cluster);
}

fn a_conflict_is_reported_not_forced(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = match cluster {
        Cluster::Virtual(_) => "v",
        Cluster::Real(_) => "r",
    };
    let shared = format!("owned-{tag}");
    let first = deployment.instantiate(
        &format!("first{tag}"),
        &[("cfg", config_map(&shared, json!({"k": "1"})))],
    );
    deployment.wait_until(&first, "the first DIG applied", |rows| {
        all(rows, "Applied", "Ready")
    });

    let second = deployment.instantiate(
        &format!("second{tag}"),
        &[("cfg", config_map(&shared, json!({"k": "2"})))],
    );
    deployment.wait_until(&second, "the second DIG refused", |rows| {
        rows.len() == 1 && rows[0].deployed == "Failed"
    });
    let message = deployment.rows(&second)[0].detail["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains(&format!("first{tag}.ca.v1.d")),
        "the message names the owner: {message}"
    );
    let held = cluster.get("configmap", &shared).unwrap();
    assert_eq!(held["data"]["k"], "1", "nothing was taken over");
    assert_eq!(
        held["metadata"]["labels"]["wasmco.io/deployment-intent-group"],
        format!("first{tag}.ca.v1.d")
    );

    // An object someone else made, with other values: their fields are
    // reported, not taken.
    let foreign = format!("foreign-{tag}");
    // From a file, as JSON: kubectl sends generated objects as protobuf,
    // which the virtual cluster does not read.
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": foreign, "namespace": "default"}, "data": {"k": "theirs"}});
    // (The virtual cluster serves no OpenAPI document to validate against.)
    cluster.kubectl_with_input(
        &["create", "--validate=false", "--filename=-"],
        &theirs.to_string(),
    );
    let third = deployment.instantiate(
        &format!("third{tag}"),
        &[("cfg", config_map(&foreign, json!({"k": "ours"})))],
    );
    deployment.wait_until(&third, "the foreign object refused", |rows| {
        rows.len() == 1 && rows[0].deployed == "Failed"
    });
    let message = deployment.rows(&third)[0].detail["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("conflict") && message.contains("wasmco.io/force-apply"),
        "{message}"
    );
    assert_eq!(
        cluster.get("configmap", &foreign).unwrap()["data"]["k"],
        "theirs"
    );

    // Terminating the refused DIG leaves the first DIG's object alone, and
    // its status does not call that object Deleted.
    expect(action(&deployment.server, &second, "terminate"), 202);
    deployment.wait_until(&second, "the second DIG terminated", |rows| {
        rows.len() == 1
            && rows[0].detail["message"]
                .as_str()
                .is_some_and(|m| m.contains("stays on the cluster"))
    });
    assert_eq!(deployment.rows(&second)[0].deployed, "Failed");
    assert!(cluster.get("configmap", &shared).is_some());
    deployment.check_against(&first, &cluster);
    deployment.check_against(&second, &cluster);
}

fn a_crd_then_its_objects(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = match cluster {
        Cluster::Virtual(_) => "v",
        Cluster::Real(_) => "r",
    };
    // The custom object comes first in the file; the CRD still goes first.
    let manifests = format!(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g-{tag}, namespace: default}}\nspec: {{size: 3}}\n---\n\
         apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: gadgets.example.com}}\n\
         spec: {{group: example.com, scope: Namespaced, names: {{plural: gadgets, singular: gadget, kind: Gadget}},\n  \
         versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]}}\n"
    );
    let dig = deployment.instantiate(&format!("crd{tag}"), &[("gadgets", manifests)]);
    deployment.wait_until(&dig, "the CRD and the gadget", |rows| {
        rows.len() == 2 && all(rows, "Applied", "Ready")
    });
    let gadget = cluster
        .get("gadgets.example.com", &format!("g-{tag}"))
        .expect("the gadget");
    assert_eq!(gadget["spec"]["size"], 3);
    deployment.check_against(&dig, &cluster);
}

fn kinds_without_a_controller_are_ready_once_there(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = match cluster {
        Cluster::Virtual(_) => "v",
        Cluster::Real(_) => "r",
    };
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: s-{tag}, namespace: default}}\nstringData: {{k: v}}\n---\n\
         apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa-{tag}, namespace: default}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: role-{tag}, namespace: default}}\n\
         rules: [{{apiGroups: [''], resources: [configmaps], verbs: [get]}}]\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{tag}, namespace: default}}\n\
         spec: {{ports: [{{port: 80, targetPort: 8080}}], selector: {{app: x}}}}\n"
    );
    let dig = deployment.instantiate(&format!("plain{tag}"), &[("plain", manifests)]);
    deployment.wait_until(&dig, "all ready", |rows| {
        rows.len() == 4 && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);
    // Resyncs see the server's defaults (a Service's clusterIP, a
    // Secret's stringData turned into data) and take them for no drift.
    std::thread::sleep(Duration::from_secs(3));
    for row in deployment.rows(&dig) {
        assert!(
            row.detail.get("drift").is_none(),
            "{} {} drifted: {}",
            row.kind,
            row.name,
            row.detail
        );
    }
}

/// `count` ConfigMaps named `{prefix}-{i}`.
fn config_maps(prefix: &str, count: usize) -> String {
    (0..count)
        .map(|i| config_map(&format!("{prefix}-{i}"), json!({"i": i.to_string()})))
        .collect()
}

impl Cluster {
    /// The names of the ConfigMaps carrying `dig`'s label.
    fn labelled(&self, dig_label: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .kubectl(&[
                "get",
                "configmaps",
                "--namespace=default",
                &format!("--selector=wasmco.io/deployment-intent-group={dig_label}"),
                "--output=name",
            ])
            .lines()
            .map(|l| l.trim_start_matches("configmap/").to_owned())
            .collect();
        names.sort();
        names
    }

    fn tag(&self) -> &'static str {
        match self {
            Cluster::Virtual(_) => "v",
            Cluster::Real(_) => "r",
        }
    }
}

const MANY: usize = 120;

fn terminate_right_after_instantiate(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("quick{}", cluster.tag());
    let dig = deployment.instantiate(&project, &[("cfg", config_maps(&project, MANY))]);
    expect(action(&deployment.server, &dig, "terminate"), 202);
    deployment.wait_until(&dig, "everything deleted", |rows| {
        rows.len() == MANY && rows.iter().all(|r| r.deployed == "Deleted")
    });
    let label = format!("{project}.ca.v1.d");
    assert_eq!(cluster.labelled(&label), Vec::<String>::new());
    // Nothing superseded comes back later.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(cluster.labelled(&label), Vec::<String>::new());
    deployment.check_against(&dig, &cluster);
}

fn instantiate_right_after_terminate(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("again{}", cluster.tag());
    let dig = deployment.instantiate(&project, &[("cfg", config_maps(&project, MANY))]);
    deployment.wait_until(&dig, "applied", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    expect(action(&deployment.server, &dig, "terminate"), 202);
    expect(action(&deployment.server, &dig, "instantiate"), 202);
    deployment.wait_until(&dig, "applied again", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    let label = format!("{project}.ca.v1.d");
    assert_eq!(cluster.labelled(&label).len(), MANY);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        cluster.labelled(&label).len(),
        MANY,
        "a late terminate removed some"
    );
    deployment.check_against(&dig, &cluster);
}

fn killed_during_an_update_that_drops_objects(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("crash{}", cluster.tag());
    let dig = deployment.instantiate(&project, &[("cfg", config_maps(&project, MANY))]);
    deployment.wait_until(&dig, "applied", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    let kept = MANY / 4;
    let app = format!("/v2/projects/{project}/{CA}/apps/cfg");
    expect(
        deployment.server.replace_upload(
            &app,
            doc("cfg", json!({})),
            config_maps(&project, kept).into_bytes(),
        ),
        200,
    );
    expect(action(&deployment.server, &dig, "update"), 202);
    deployment.restart();
    let label = format!("{project}.ca.v1.d");
    wait_for("only the kept objects", || {
        cluster.labelled(&label).len() == kept
    });
    deployment.wait_until(&dig, "the update applied", |rows| {
        rows.len() == kept && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);
}

/// Only the virtual cluster can be restarted empty here.
#[test]
fn a_cluster_that_restarts_empty_gets_everything_back() {
    let mut cluster = Cluster::virtual_cluster();
    let mut deployment = Deployment::new(&cluster);
    let project = "empty";
    let dig = deployment.instantiate(project, &[("cfg", config_maps(project, MANY))]);
    deployment.wait_until(&dig, "applied", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    let health = |server: &Server| {
        expect(
            server.get("/v2/cluster-providers/lab/clusters/solo/status"),
            200,
        )
    };
    wait_for("the cluster reachable", || {
        health(&deployment.server)["state"] == "Reachable"
    });
    assert!(health(&deployment.server)["version"].is_string());
    let Cluster::Virtual(virtual_cluster) = &mut cluster else {
        unreachable!()
    };
    virtual_cluster.restart_empty("solo");
    wait_for("everything back", || {
        cluster.labelled("empty.ca.v1.d").len() == MANY
    });
    deployment.wait_until(&dig, "all applied", |rows| all(rows, "Applied", "Ready"));
    deployment.check_against(&dig, &cluster);
}

#[test]
fn an_unreachable_cluster_says_so_and_since_when() {
    let cluster = Cluster::virtual_cluster();
    let deployment = Deployment::new(&cluster);
    let status = || {
        expect(
            deployment
                .server
                .get("/v2/cluster-providers/lab/clusters/solo/status"),
            200,
        )
    };
    wait_for("reachable", || status()["state"] == "Reachable");
    let up = status();
    drop(cluster);
    wait_for("unreachable", || status()["state"] == "Unreachable");
    let down = status();
    assert_ne!(down["since"], up["since"]);
    assert!(
        down["lastError"].as_str().is_some_and(|e| !e.is_empty()),
        "{down}"
    );
    assert_eq!(
        down["version"], up["version"],
        "the last version seen is kept"
    );
    // An unknown cluster is a 404, not Unknown.
    assert_eq!(
        deployment
            .server
            .get("/v2/cluster-providers/lab/clusters/nowhere/status")
            .status(),
        404
    );
}

macro_rules! on_both {
    ($($scenario:ident),* $(,)?) => {
        mod virtual_cluster {
            $(#[test] fn $scenario() { super::$scenario(super::Cluster::virtual_cluster()) })*
        }
        mod api_server {
            $(#[test] fn $scenario() { super::$scenario(super::Cluster::api_server()) })*
        }
    };
}

on_both!(
    apply_update_and_terminate,
    drift_is_repaired,
    a_conflict_is_reported_not_forced,
    a_crd_then_its_objects,
    kinds_without_a_controller_are_ready_once_there,
    terminate_right_after_instantiate,
    instantiate_right_after_terminate,
    killed_during_an_update_that_drops_objects,
);
