//! What the scenarios run on and look at: a cluster of either kind, a
//! wasmco server deploying to it, and the status read back.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::deploy::action;
use crate::kube_apiserver::{ApiServer, kubectl};
use crate::support::server::{Server, Virtual, doc, expect};
use crate::support::wait::eventually;

/// A cluster to run a scenario on.
pub enum Cluster {
    Virtual(Virtual),
    Real(&'static ApiServer),
}

impl Cluster {
    pub fn virtual_cluster() -> Cluster {
        Cluster::Virtual(Virtual::start("solo"))
    }

    pub fn api_server() -> Cluster {
        Cluster::Real(ApiServer::shared())
    }

    pub fn kubeconfig(&self) -> (&[u8], &Path) {
        match self {
            Cluster::Virtual(v) => (&v.kubeconfig, &v.kubeconfig_path),
            Cluster::Real(r) => (&r.kubeconfig, &r.kubeconfig_path),
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> String {
        let output = kubectl(self.kubeconfig().1, args);
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub fn kubectl_with_input(&self, args: &[&str], input: &str) {
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
    pub fn get(&self, kind: &str, name: &str) -> Option<Value> {
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

/// How long a scenario's step may take on either kind of cluster.
pub const SCENARIO_PATIENCE: Duration = Duration::from_secs(60);

/// One resource's status: (kind, name, deployed, ready, detail entry).
#[derive(Debug)]
pub struct Row {
    pub kind: String,
    pub name: String,
    pub deployed: String,
    pub ready: String,
    pub detail: Value,
}

/// A wasmco server with one cluster, `solo`, and a DIG whose apps are the
/// given manifests, all placed on it.
pub struct Deployment {
    pub server: Server,
    data: tempfile::TempDir,
    resync: String,
    project: String,
    dig: String,
}

pub const CA: &str = "composite-apps/ca/v1";

impl Deployment {
    /// Resynced every second: what a scenario checks need not wait.
    pub fn new(cluster: &Cluster) -> Deployment {
        Self::with_resync(cluster, "1s")
    }

    /// Resynced every `interval`.
    pub fn with_resync(cluster: &Cluster, interval: &str) -> Deployment {
        let data = tempfile::tempdir().unwrap();
        let server = Server::start_with(data.path(), &Self::args(interval));
        expect(
            server.post("/v2/cluster-providers", doc("lab", json!({}))),
            201,
        );
        server.register_cluster("lab", "solo", cluster.kubeconfig().0);
        Deployment {
            server,
            data,
            resync: interval.to_owned(),
            project: String::new(),
            dig: String::new(),
        }
    }

    /// Project `project` with the apps (name, manifests), instantiated.
    pub fn instantiate(&mut self, project: &str, apps: &[(&str, String)]) -> String {
        self.instantiate_in(project, "ca", apps)
    }

    /// Composite app `composite_app` (version v1) of project `project`
    /// (made unless it is there) with the apps, instantiated as DIG `d`.
    pub fn instantiate_in(
        &mut self,
        project: &str,
        composite_app: &str,
        apps: &[(&str, String)],
    ) -> String {
        let server = &self.server;
        let ca = composite_app_with(server, project, composite_app, apps);
        let names: Vec<&str> = apps.iter().map(|(app, _)| *app).collect();
        let dig = approved_dig_on_solo(server, &ca, &names);
        expect(action(server, &dig, "instantiate"), 202);
        self.project = project.to_owned();
        self.dig = dig.clone();
        dig
    }

    fn args(resync: &str) -> [&str; 4] {
        ["--resync-interval", resync, "--probe-interval", "1s"]
    }

    /// `kill -9` and a start on the same data.
    pub fn restart(&mut self) {
        self.server.sigkill();
        self.server = Server::start_with(self.data.path(), &Self::args(&self.resync));
    }

    pub fn rows(&self, dig: &str) -> Vec<Row> {
        Self::rows_of(&self.server, dig)
    }

    /// The DIG's resources as `server`'s status shows them.
    pub fn rows_of(server: &Server, dig: &str) -> Vec<Row> {
        let status = |which: &str| {
            expect(
                server.get(&format!("{dig}/status?status={which}&output=detail")),
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

    pub fn wait_until(&self, dig: &str, what: &str, done: impl Fn(&[Row]) -> bool) {
        eventually(what, SCENARIO_PATIENCE, || {
            let rows = self.rows(dig);
            if done(&rows) {
                return Ok(());
            }
            let seen: Vec<(&str, &Value)> =
                rows.iter().map(|r| (r.ready.as_str(), &r.detail)).collect();
            Err(format!("the status says {seen:?}"))
        });
    }

    /// Waits until the server's reconciles have settled `count` more
    /// times (each DIG's once a resync interval): the resyncs a check is
    /// to see, counted rather than guessed at from the interval.
    pub fn wait_for_resyncs(&self, count: u64) {
        let settled = || settled_reconciles(&self.server);
        let from = settled();
        eventually(
            format!("{count} more settled reconciles"),
            SCENARIO_PATIENCE,
            || {
                let now = settled();
                if now >= from + count {
                    Ok(())
                } else {
                    Err(format!("{} more", now - from))
                }
            },
        );
    }

    /// The status says nothing the cluster contradicts.
    pub fn check_against(&self, dig: &str, cluster: &Cluster) {
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

/// How many reconciles `server` has seen settle (end with everything in
/// place, a resync to follow), as its metrics count them.
pub fn settled_reconciles(server: &Server) -> u64 {
    counter(
        server,
        r#"wasmco_rsync_reconciles_total{outcome="settled"}"#,
    )
}

/// The value of the counter `series` (its name and labels) on `/metrics`;
/// 0 before it counted anything.
pub fn counter(server: &Server, series: &str) -> u64 {
    let answer = server.get("/metrics");
    assert_eq!(answer.status(), 200);
    let metrics = answer.text().unwrap();
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |count| count.trim().parse().unwrap())
}

/// Composite app `composite_app` (version v1) of project `project` (made
/// unless it is there) with the apps (name, manifests); its path.
pub fn composite_app_with(
    server: &Server,
    project: &str,
    composite_app: &str,
    apps: &[(&str, String)],
) -> String {
    let made = server.post("/v2/projects", doc(project, json!({})));
    assert!(
        [201, 409].contains(&made.status().as_u16()),
        "{:?}",
        made.text()
    );
    let ca = format!("/v2/projects/{project}/composite-apps/{composite_app}/v1");
    expect(
        server.post(
            &format!("/v2/projects/{project}/composite-apps"),
            doc(composite_app, json!({"compositeAppVersion": "v1"})),
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
    ca
}

/// DIG `d` of the composite app version at `ca`, with composite profile
/// `prof`, its `apps` placed on cluster `lab/solo`, approved; its path.
pub fn approved_dig_on_solo(server: &Server, ca: &str, apps: &[&str]) -> String {
    let dig = new_dig(server, ca);
    place_on_solo_and_approve(server, &dig, apps);
    dig
}

/// DIG `d` of the composite app version at `ca`, with composite profile
/// `prof`, each app placed by its intent, approved; its path.
pub fn approved_dig(server: &Server, ca: &str, intents: &[(&str, Value)]) -> String {
    let dig = new_dig(server, ca);
    place_and_approve(server, &dig, intents);
    dig
}

/// An intent of a DIG besides its placement: `(collection, key, name,
/// spec)`, posted under the DIG's `collection` as `name` and named in its
/// intents under `key` (`("failover-intents", "failoverIntent", "fo", …)`).
pub type DigIntent<'a> = (&'a str, &'a str, &'a str, Value);

/// [`approved_dig`], with `more` intents.
pub fn approved_dig_with(
    server: &Server,
    ca: &str,
    intents: &[(&str, Value)],
    more: &[DigIntent<'_>],
) -> String {
    let dig = new_dig(server, ca);
    place_and_approve_with(server, &dig, intents, more);
    dig
}

/// DIG `d` of the composite app version at `ca`, with composite profile
/// `prof`; its path.
fn new_dig(server: &Server, ca: &str) -> String {
    expect(
        server.post(&format!("{ca}/composite-profiles"), doc("prof", json!({}))),
        201,
    );
    expect(
        server.post(
            &format!("{ca}/deployment-intent-groups"),
            doc("d", json!({"compositeProfile": "prof", "version": "r1"})),
        ),
        201,
    );
    format!("{ca}/deployment-intent-groups/d")
}

/// Places each of `apps` on cluster `lab/solo` (generic placement intent
/// `gpi`) and approves the DIG.
pub fn place_on_solo_and_approve(server: &Server, dig: &str, apps: &[&str]) {
    let solo = json!({"allOf": [{"clusterProvider": "lab", "cluster": "solo"}]});
    let intents: Vec<(&str, Value)> = apps.iter().map(|app| (*app, solo.clone())).collect();
    place_and_approve(server, dig, &intents);
}

/// Gives each app its placement intent (generic placement intent `gpi`,
/// named in the DIG's intents) and approves the DIG.
pub fn place_and_approve(server: &Server, dig: &str, intents: &[(&str, Value)]) {
    place_and_approve_with(server, dig, intents, &[]);
}

/// [`place_and_approve`], with `more` intents.
fn place_and_approve_with(
    server: &Server,
    dig: &str,
    intents: &[(&str, Value)],
    more: &[DigIntent<'_>],
) {
    expect(
        server.post(
            &format!("{dig}/generic-placement-intents"),
            doc("gpi", json!({})),
        ),
        201,
    );
    for (app, intent) in intents {
        let body = json!({"app": app, "intent": intent});
        expect(
            server.post(
                &format!("{dig}/generic-placement-intents/gpi/app-intents"),
                doc(app, body),
            ),
            201,
        );
    }
    let mut named = json!({"genericPlacementIntent": "gpi"});
    for (collection, key, name, spec) in more {
        let posted = server.post(&format!("{dig}/{collection}"), doc(name, spec.clone()));
        expect(posted, 201);
        named[*key] = json!(name);
    }
    expect(
        server.post(
            &format!("{dig}/intents"),
            doc("i", json!({"intent": named})),
        ),
        201,
    );
    expect(action(server, dig, "approve"), 202);
}

pub fn config_map(name: &str, data: Value) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {data}\n---\n"
    )
}

pub fn all(rows: &[Row], deployed: &str, ready: &str) -> bool {
    !rows.is_empty()
        && rows
            .iter()
            .all(|r| r.deployed == deployed && r.ready == ready)
}

/// `count` ConfigMaps named `{prefix}-{i}`.
pub fn config_maps(prefix: &str, count: usize) -> String {
    (0..count)
        .map(|i| config_map(&format!("{prefix}-{i}"), json!({"i": i.to_string()})))
        .collect()
}

impl Cluster {
    /// The names of the ConfigMaps carrying the label of the DIG whose key
    /// (`project/app/version/dig`) is `dig`.
    pub fn labelled(&self, dig: &str) -> Vec<String> {
        let dig_label = wasmco_rsync::owner_label(dig);
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

    pub fn tag(&self) -> &'static str {
        match self {
            Cluster::Virtual(_) => "v",
            Cluster::Real(_) => "r",
        }
    }
}

/// Runs each scenario (a function of a [`Cluster`] in the calling module)
/// as two tests: on the virtual cluster and on the real API server.
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

pub(crate) use on_both;
