//! Several `wasmco serve` hosts on one real etcd: any host answers and
//! sees the others' writes at once, writes and DIG actions are serialised
//! across hosts, and the deployments of a host killed mid-apply are taken
//! over by the others and finished.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::deploy::action;
use crate::store_etcd::Etcd;
use crate::support::server::{Server, authorised, doc, expect};
use crate::support::wait::{eventually, wait_until};

/// `wasmco serve` hosts on one etcd, each with its own data directory and
/// the first one's master key.
pub(crate) struct Hosts {
    pub(crate) servers: Vec<Option<Server>>,
    _dirs: Vec<tempfile::TempDir>,
}

impl Hosts {
    pub(crate) fn start(etcd: &Etcd, count: usize, extra: &[&str]) -> Hosts {
        // Once etcd answers.
        drop(etcd.store());
        let location = etcd.location();
        let mut args = vec!["--store", &location, "--lease-ttl", "3s"];
        args.extend_from_slice(extra);
        let mut dirs: Vec<tempfile::TempDir> = Vec::new();
        let mut servers = Vec::new();
        for index in 0..count {
            let dir = tempfile::tempdir().unwrap();
            let key: Option<PathBuf> = dirs.first().map(|first| first.path().join("master.key"));
            let id = format!("host-{index}");
            let mut env = vec![("WASMCO_HOST_ID", id.as_str())];
            let key_text = key.as_ref().map(|k| k.display().to_string());
            if let Some(key) = &key_text {
                env.push(("WASMCO_MASTER_KEY_FILE", key.as_str()));
            }
            let log = dir.path().join("host.log");
            servers.push(Some(Server::start_logged(dir.path(), &args, &env, &log)));
            dirs.push(dir);
        }
        Hosts {
            servers,
            _dirs: dirs,
        }
    }

    pub(crate) fn host(&self, index: usize) -> &Server {
        self.servers[index].as_ref().expect("the host is alive")
    }

    /// The live hosts, from `index`'s side: id → targets it owns.
    fn ownership(&self, index: usize) -> Vec<(String, Vec<String>)> {
        expect(self.host(index).get("/v2/hosts"), 200)
            .as_array()
            .unwrap()
            .iter()
            .map(|host| {
                let targets = host["targets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap().to_owned())
                    .collect();
                (host["id"].as_str().unwrap().to_owned(), targets)
            })
            .collect()
    }
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn hosts_on_one_etcd_see_each_others_writes_and_one_of_two_racing_creates_wins() {
    let etcd = Etcd::start();
    let hosts = Hosts::start(&etcd, 2, &[]);
    let (a, b) = (hosts.host(0), hosts.host(1));

    // b's list is cached before a writes: the write shows there as soon as
    // b's watch of the store reports it (milliseconds; bounded here at 2 s
    // for a loaded machine), with no restart or expiry to wait for.
    assert!(names(&expect(b.get("/v2/projects"), 200)).is_empty());
    expect(a.post("/v2/projects", doc("shared", json!({}))), 201);
    wait_until(
        "b to list what a wrote after b cached its list",
        Duration::from_secs(2),
        || names(&expect(b.get("/v2/projects"), 200)) == ["shared"],
    );

    // The same name through both hosts at once: exactly one is created.
    for round in 0..10 {
        let name = format!("race-{round}");
        let statuses: Vec<u16> = std::thread::scope(|scope| {
            let racers: Vec<_> = [a, b]
                .map(|host| {
                    let name = name.clone();
                    scope.spawn(move || {
                        host.post("/v2/projects", doc(&name, json!({})))
                            .status()
                            .as_u16()
                    })
                })
                .into_iter()
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let mut sorted = statuses.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [201, 409], "round {round}: {statuses:?}");
    }
    assert_eq!(names(&expect(a.get("/v2/projects"), 200)).len(), 11);

    // A token issued through one host works on the other, and stops
    // working there once revoked through the first.
    let issued = expect(
        a.post(
            "/v2/tokens",
            json!({"metadata": {"name": "viewer"}, "spec": {"projects": ["shared"], "role": "viewer", "expires": "1h"}}),
        ),
        201,
    );
    let viewer = authorised(issued["status"]["token"].as_str().unwrap());
    let read = || {
        viewer
            .get(b.url("/v2/projects/shared"))
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(read(), 200);
    expect(a.delete("/v2/tokens/viewer"), 204);
    assert_eq!(read(), 401);

    // Both hosts are listed, each from its own side.
    let listed = expect(b.get("/v2/hosts"), 200);
    let ids: Vec<(&str, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["id"].as_str().unwrap(), h["self"].as_bool().unwrap()))
        .collect();
    assert_eq!(ids, [("host-0", false), ("host-1", true)]);

    // What one host acknowledged outlives it.
    let mut hosts = hosts;
    hosts.servers[0].take().unwrap().kill();
    assert_eq!(
        names(&expect(hosts.host(1).get("/v2/projects"), 200)).len(),
        11
    );
}

#[test]
fn a_host_with_another_master_key_is_refused_by_a_shared_store() {
    let etcd = Etcd::start();
    drop(etcd.store());
    let first = tempfile::tempdir().unwrap();
    let location = etcd.location();
    let _host = Server::start_with(first.path(), &["--store", &location]);
    let second = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &location])
        .arg("--data-dir")
        .arg(second.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("same one"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_host_reaches_etcd_over_tls_with_a_client_certificate_and_a_password() {
    use wasmco_pki::{Usage, issue, new_ca};
    let certs = tempfile::tempdir().unwrap();
    let ca = new_ca("etcd test CA").unwrap();
    let serving = issue(&ca, "etcd", &[], &["127.0.0.1".into()], Usage::Server).unwrap();
    let client = issue(&ca, "wasmco", &[], &[], Usage::Client).unwrap();
    let file = |name: &str, text: &str| {
        let path = certs.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let ca_file = file("ca.crt", &ca.certificate);
    let (cert_file, key_file) = (
        file("client.crt", &client.certificate),
        file("client.key", &client.key),
    );
    let etcd = Etcd::start_tls(
        &file("etcd.crt", &serving.certificate),
        &file("etcd.key", &serving.key),
        &ca_file,
    );
    // Authentication on, with a root user, through etcd's own client.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tls = etcd_client::TlsOptions::new()
        .ca_certificate(etcd_client::Certificate::from_pem(&ca.certificate))
        .identity(etcd_client::Identity::from_pem(
            &client.certificate,
            &client.key,
        ));
    let mut admin = eventually("etcd to answer over TLS", Duration::from_secs(20), || {
        runtime.block_on(async {
            let options = etcd_client::ConnectOptions::new().with_tls(tls.clone());
            let mut admin =
                etcd_client::Client::connect([etcd.endpoint.clone()], Some(options)).await?;
            admin.status().await?;
            Ok::<_, etcd_client::Error>(admin)
        })
    });
    runtime.block_on(async {
        admin.user_add("root", "s3cret", None).await.unwrap();
        admin.user_grant_role("root", "root").await.unwrap();
        admin.auth_enable().await.unwrap();
    });

    let location = etcd.location();
    let flags = |password: &str| -> (Vec<String>, Vec<(&'static str, String)>) {
        let args = [
            "--store",
            &location,
            "--etcd-ca",
            &ca_file.display().to_string(),
            "--etcd-cert",
            &cert_file.display().to_string(),
            "--etcd-key",
            &key_file.display().to_string(),
            "--etcd-user",
            "root",
        ]
        .map(str::to_owned)
        .to_vec();
        (args, vec![("WASMCO_ETCD_PASSWORD", password.to_owned())])
    };
    let data = tempfile::tempdir().unwrap();
    let (args, env) = flags("s3cret");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start_with_env(data.path(), &args, &env);
    expect(server.post("/v2/projects", doc("secure", json!({}))), 201);
    assert_eq!(names(&expect(server.get("/v2/projects"), 200)), ["secure"]);
    drop(server);

    // A wrong password is refused at start, in words.
    let (args, _) = flags("wrong");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(&args)
        .arg("--data-dir")
        .arg(data.path())
        .env("WASMCO_ETCD_PASSWORD", "wrong")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("etcd"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

const DIGS: usize = 20;
const CLUSTERS: usize = 30;

/// Composite app `ca{i}` with one app whose ConfigMap is `cm-{i}`, and its
/// DIG placed on every cluster labelled `edge`, approved.
fn dig_on_every_cluster(server: &Server, i: usize) -> String {
    let ca = format!("/v2/projects/p/composite-apps/ca{i}/v1");
    expect(
        server.post(
            "/v2/projects/p/composite-apps",
            doc(&format!("ca{i}"), json!({"compositeAppVersion": "v1"})),
        ),
        201,
    );
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}}}\ndata: {{dig: d{i}}}\n"
    );
    expect(
        server.upload(
            &format!("{ca}/apps"),
            doc("app", json!({})),
            Some(manifest.into_bytes()),
        ),
        201,
    );
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
    let dig = format!("{ca}/deployment-intent-groups/d");
    expect(
        server.post(
            &format!("{dig}/generic-placement-intents"),
            doc("gpi", json!({})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{dig}/generic-placement-intents/gpi/app-intents"),
            doc(
                "app",
                json!({"app": "app", "intent": {"allOf": [{"clusterProvider": "lab", "clusterLabel": "edge"}]}}),
            ),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{dig}/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi"}}),
            ),
        ),
        201,
    );
    dig
}

/// `count` virtual clusters, `c00`, `c01`, …, on `runtime`, each answer
/// after `latency`.
pub(crate) fn virtual_clusters(
    runtime: &tokio::runtime::Runtime,
    count: usize,
    latency: Duration,
) -> Vec<wasmco_vcluster::VirtualCluster> {
    let behaviour = wasmco_vcluster::Behaviour {
        ready_after: Duration::from_millis(100),
        latency,
        ..Default::default()
    };
    (0..count)
        .map(|i| {
            runtime
                .block_on(wasmco_vcluster::VirtualCluster::start(
                    &format!("c{i:02}"),
                    "127.0.0.1:0".parse().unwrap(),
                    behaviour.clone(),
                ))
                .unwrap()
        })
        .collect()
}

/// Provider `lab` with `clusters` registered by their names and labelled
/// `edge`, and project `p`.
pub(crate) fn lab_with(server: &Server, clusters: &[wasmco_vcluster::VirtualCluster]) {
    expect(
        server.post("/v2/cluster-providers", doc("lab", json!({}))),
        201,
    );
    for (i, cluster) in clusters.iter().enumerate() {
        let name = format!("c{i:02}");
        server.register_cluster("lab", &name, cluster.kubeconfig().as_bytes());
        expect(
            server.post(
                &format!("/v2/cluster-providers/lab/clusters/{name}/labels"),
                json!({"clusterLabel": "edge"}),
            ),
            201,
        );
    }
    expect(server.post("/v2/projects", doc("p", json!({}))), 201);
}

/// Waits until `server` reports `dig`'s one object Applied on each of
/// `clusters` clusters, before `deadline`.
fn wait_applied(server: &Server, dig: &str, clusters: usize, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    eventually(format!("{dig} to converge"), left, || {
        let answer = server.get(&format!("{dig}/status?status=deployed&output=summary"));
        if answer.status() != 200 {
            return Err(answer.status().to_string());
        }
        let summary: Value = answer.json().unwrap();
        if summary["deployedCounts"] == json!({"Applied": clusters}) {
            Ok(())
        } else {
            Err(summary.to_string())
        }
    });
}

#[test]
fn the_deployments_of_a_host_killed_mid_apply_are_taken_over_and_finished() {
    let etcd = Etcd::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Slow enough that the kill lands while applies are under way.
    let clusters = virtual_clusters(&runtime, CLUSTERS, Duration::from_millis(150));
    let mut hosts = Hosts::start(&etcd, 3, &["--probe-interval", "1s"]);
    lab_with(hosts.host(0), &clusters);
    let digs: Vec<String> = (0..DIGS)
        .map(|i| dig_on_every_cluster(hosts.host(i % 3), i))
        .collect();

    // One action per DIG at a time, whichever host it reaches.
    let approvals: Vec<u16> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..2)
            .map(|h| {
                let (host, dig) = (hosts.host(h), &digs[0]);
                scope.spawn(move || action(host, dig, "approve").status().as_u16())
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut sorted = approvals.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [202, 409], "{approvals:?}");
    for (i, dig) in digs.iter().enumerate() {
        if i > 0 {
            expect(action(hosts.host(i % 3), dig, "approve"), 202);
        }
        expect(action(hosts.host(i % 3), dig, "instantiate"), 202);
    }

    // Every DIG finds an owner; then the busiest host dies mid-apply.
    let key = |i: usize| format!("p/ca{i}/v1/d");
    let owners = eventually("every DIG to get an owner", Duration::from_secs(30), || {
        let owners: Vec<_> = hosts
            .ownership(0)
            .into_iter()
            .flat_map(|(host, targets)| targets.into_iter().map(move |t| (t, host.clone())))
            .filter(|(target, _)| (0..DIGS).any(|i| *target == key(i)))
            .collect();
        if owners.len() < DIGS {
            Err(format!("{owners:?}"))
        } else {
            Ok(owners)
        }
    });
    let busiest = (0..3)
        .max_by_key(|h| {
            let id = format!("host-{h}");
            owners.iter().filter(|(_, owner)| *owner == id).count()
        })
        .unwrap();
    let theirs = owners
        .iter()
        .filter(|(_, owner)| *owner == format!("host-{busiest}"))
        .count();
    assert!(
        theirs > 0 && theirs < DIGS,
        "the work is spread: {owners:?}"
    );
    let applied_before: u64 = clusters.iter().map(|c| c.writes()).sum();
    hosts.servers[busiest].take().unwrap().kill();
    let killed = Instant::now();
    let survivor = (busiest + 1) % 3;

    // Within the lease (3 s) and a few seconds, the survivors own it all.
    let dead = format!("host-{busiest}");
    let bound = Duration::from_secs(8).saturating_sub(killed.elapsed());
    eventually("the survivors to take over within the bound", bound, || {
        let ownership = hosts.ownership(survivor);
        let owned: usize = ownership
            .iter()
            .map(|(_, targets)| {
                targets
                    .iter()
                    .filter(|t| (0..DIGS).any(|i| **t == key(i)))
                    .count()
            })
            .sum();
        if ownership.iter().all(|(host, _)| *host != dead) && owned == DIGS {
            Ok(())
        } else {
            Err(format!("{ownership:?}"))
        }
    });
    let takeover = killed.elapsed();
    eprintln!(
        "takeover after {takeover:?} ({theirs} DIGs; {applied_before} cluster writes before the kill)"
    );

    // Every object ends Applied on every cluster, once.
    let deadline = Instant::now() + Duration::from_secs(120);
    for dig in &digs {
        wait_applied(hosts.host(survivor), dig, CLUSTERS, deadline);
    }
    let client = reqwest::blocking::Client::new();
    for cluster in &clusters {
        let listed: Value = client
            .get(format!(
                "http://{}/api/v1/namespaces/default/configmaps?labelSelector=wasmco.io%2Fdeployment-intent-group",
                cluster.addr()
            ))
            .send()
            .unwrap()
            .json()
            .unwrap();
        let mut found: Vec<String> = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|cm| cm["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        found.sort();
        let mut expected: Vec<String> = (0..DIGS).map(|i| format!("cm-{i}")).collect();
        expected.sort();
        assert_eq!(found, expected, "on {}", cluster.addr());
    }
}

#[test]
fn hosts_ride_out_an_etcd_restart_under_load_with_503s_and_finish_their_work() {
    let mut etcd = Etcd::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, 6, Duration::from_millis(100));
    let hosts = Hosts::start(&etcd, 2, &["--probe-interval", "1s"]);
    lab_with(hosts.host(0), &clusters);
    let digs: Vec<String> = (0..4)
        .map(|i| dig_on_every_cluster(hosts.host(i % 2), i))
        .collect();
    for (i, dig) in digs.iter().enumerate() {
        expect(action(hosts.host(i % 2), dig, "approve"), 202);
        expect(action(hosts.host(i % 2), dig, "instantiate"), 202);
    }

    // etcd goes away mid-apply: every answer meanwhile is a 503 with
    // Retry-After (or, for what the caches hold, a 200), never a 500.
    etcd.kill();
    let away = Instant::now();
    let mut unavailable = 0;
    while away.elapsed() < Duration::from_secs(3) {
        for host in 0..2 {
            for answer in [
                hosts.host(host).get("/v2/projects/p/composite-apps"),
                hosts
                    .host(host)
                    .post("/v2/projects", doc("during", json!({}))),
            ] {
                let status = answer.status().as_u16();
                if status == 503 {
                    assert_eq!(answer.headers()["retry-after"], "1");
                    unavailable += 1;
                } else {
                    assert_eq!(status, 200, "{}", answer.text().unwrap());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(unavailable > 0, "the writes at least said etcd was away");
    etcd.restart();

    // Both hosts come back by themselves and finish every deployment.
    let deadline = Instant::now() + Duration::from_secs(90);
    for (i, dig) in digs.iter().enumerate() {
        wait_applied(hosts.host(i % 2), dig, clusters.len(), deadline);
    }
    for host in 0..2 {
        expect(
            hosts
                .host(host)
                .post("/v2/projects", doc(&format!("after-{host}"), json!({}))),
            201,
        );
    }
    let ownership = hosts.ownership(0);
    assert_eq!(ownership.len(), 2, "both hosts are back: {ownership:?}");
}

/// `kill -STOP` or `-CONT` of a process.
fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

/// A host stopped mid-action for longer than its lease (SIGSTOP past the
/// time to live), then let go on (SIGCONT), writes nothing after the host
/// that took the DIG's lock over: its writes carry the lock as a fence.
#[test]
fn a_host_that_lost_its_lease_mid_action_writes_nothing_after_the_next_holder() {
    let etcd = Etcd::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, 1, Duration::ZERO);
    let limits = r#"{"deadlineMs": 120000}"#;
    let hosts = Hosts::start(&etcd, 2, &["--controller-limits", limits]);
    let (a, b) = (hosts.host(0), hosts.host(1));
    lab_with(a, &clusters);
    let dig = dig_on_every_cluster(a, 0);
    // A placement controller that takes its time, named by the DIG.
    expect(
        a.upload(
            "/v2/controllers",
            doc("slow", json!({"type": "placement", "priority": 1})),
            Some(crate::support::server::wasm("guest_hostile.wasm")),
        ),
        201,
    );
    let slow = format!("{dig}/controller-intents/slow");
    expect(
        a.post(
            &format!("{dig}/controller-intents"),
            doc("slow", json!({"do": "slow", "spins": 3_000_000_000u64})),
        ),
        201,
    );
    expect(
        a.put(
            &format!("{dig}/intents/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "slow": "slow"}}),
            ),
        ),
        200,
    );
    expect(action(a, &dig, "approve"), 202);

    let stopped = std::thread::scope(|scope| {
        let first = scope.spawn(|| action(a, &dig, "instantiate"));
        // A takes the DIG's lock and runs the slow controller; it is stopped
        // there for longer than its lease lasts (3 s). The lease running out
        // on A's clock is the point, and no request of B's may come first.
        std::thread::sleep(Duration::from_millis(500));
        signal(a.pid(), "-STOP");
        std::thread::sleep(Duration::from_secs(5));
        // B takes the lock A lost and instantiates, quickly now.
        expect(b.put(&slow, doc("slow", json!({"do": "ok"}))), 200);
        expect(action(b, &dig, "instantiate"), 202);
        let after_b = expect(
            b.get(&format!("{dig}/status?status=deployed&output=summary")),
            200,
        );
        signal(a.pid(), "-CONT");
        let answer = first.join().unwrap();
        (answer.status().as_u16(), answer.text().unwrap(), after_b)
    });
    let (status, body, after_b) = stopped;
    assert_eq!(status, 503, "the stopped host's action is refused: {body}");
    assert!(body.contains("lost its hold"), "{body}");
    let now = expect(
        b.get(&format!("{dig}/status?status=deployed&output=summary")),
        200,
    );
    assert_eq!(
        now["states"], after_b["states"],
        "the stopped host wrote over the next holder's state"
    );
    assert_eq!(now["states"]["actions"].as_array().map(Vec::len), Some(3));
}

/// Hosts on one etcd share the probing: each cluster is probed by one of
/// them, every host reads the record, and a cluster's record stays fresh
/// when its prober dies.
#[test]
fn one_host_probes_each_cluster_and_the_others_read_its_record() {
    let etcd = Etcd::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, 4, Duration::ZERO);
    let mut hosts = Hosts::start(&etcd, 3, &["--probe-interval", "1s"]);
    lab_with(hosts.host(0), &clusters);
    let reachable = |host: &Server, cluster: usize| {
        let status = host.get(&format!(
            "/v2/cluster-providers/lab/clusters/c{cluster:02}/status"
        ));
        status.status() == 200 && status.json::<Value>().unwrap()["state"] == "Reachable"
    };
    wait_until(
        "the records to show every cluster reachable",
        Duration::from_secs(30),
        || (0..3).all(|h| (0..4).all(|c| reachable(hosts.host(h), c))),
    );
    // Three hosts probing each cluster every second would make three
    // probes a second; one prober makes one.
    let probes = || -> Vec<u64> { clusters.iter().map(|c| c.requests().version).collect() };
    let before = probes();
    // A window to measure the rate in, not a wait for anything.
    std::thread::sleep(Duration::from_secs(5));
    for (after, before) in probes().iter().zip(&before) {
        let rate = (after - before) as f64 / 5.0;
        assert!(rate <= 1.6, "a cluster is probed {rate} times a second");
        assert!(rate >= 0.4, "a cluster is not probed ({rate} a second)");
    }
    // Its prober gone, each cluster is probed by a survivor.
    hosts.servers[0].take().unwrap().kill();
    let at_the_kill = probes();
    wait_until(
        "a survivor to probe each cluster",
        Duration::from_secs(30),
        || {
            probes()
                .iter()
                .zip(&at_the_kill)
                .all(|(now, then)| now > then)
        },
    );
    let before = probes();
    // Taken over for good, not probed once on the way: probes go on.
    std::thread::sleep(Duration::from_secs(4));
    for (after, before) in probes().iter().zip(&before) {
        assert!(after > before, "a cluster is no longer probed");
    }
}

#[test]
fn a_host_killed_mid_rollout_leaves_the_survivor_to_go_on_from_the_same_group() {
    let etcd = Etcd::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let clusters = virtual_clusters(&runtime, 6, Duration::ZERO);
    let mut hosts = Hosts::start(&etcd, 2, &["--probe-interval", "1s"]);
    lab_with(hosts.host(0), &clusters);
    let dig = dig_on_every_cluster(hosts.host(0), 0);
    // Three groups of two, a pause after each for the kill to land in.
    let waves = json!({"groups": {"size": 2}, "pauseSeconds": 3});
    for (path, name, spec) in [
        (format!("{dig}/rollout-intents"), "waves", waves),
        (
            format!("{dig}/intents"),
            "rollout",
            json!({"intent": {"rolloutIntent": "waves"}}),
        ),
    ] {
        expect(hosts.host(0).post(&path, doc(name, spec)), 201);
    }
    expect(action(hosts.host(0), &dig, "approve"), 202);
    expect(action(hosts.host(0), &dig, "instantiate"), 202);
    let rollout =
        |host: &Server| expect(host.get(&format!("{dig}/rollout")), 200)["rollout"].clone();
    wait_until("group 1 Ready and pausing", Duration::from_secs(20), || {
        rollout(hosts.host(0))["readyAt"].is_string()
    });
    let owner = eventually("the DIG's owner", Duration::from_secs(10), || {
        hosts
            .ownership(0)
            .into_iter()
            .find(|(_, targets)| targets.iter().any(|t| t == "p/ca0/v1/d"))
            .map(|(host, _)| host)
            .ok_or("no owner yet")
    });
    let owner: usize = owner.trim_start_matches("host-").parse().unwrap();
    assert_eq!(rollout(hosts.host(0))["released"], 1);
    hosts.servers[owner].take().unwrap().kill();
    let survivor = hosts.host(1 - owner);

    // The survivor releases groups 2 and 3, each once, in order.
    let mut seen = vec![1];
    wait_until(
        "the rollout Done on the survivor",
        Duration::from_secs(60),
        || {
            let now = rollout(survivor);
            let released = now["released"].as_u64().unwrap();
            if seen.last() != Some(&released) {
                seen.push(released);
            }
            now["phase"] == "Done"
        },
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&3));
    wait_applied(survivor, &dig, 6, Instant::now() + Duration::from_secs(30));
}
