//! The fleet at rest: 1,000 virtual clusters served by one process, 20
//! DIGs of 5 objects (five kinds) placed on every cluster (100,000
//! objects), `wasmco serve` in a process of its own. Measured: the time to
//! converge, then wasmco at rest (RSS, threads, sockets, CPU, the requests
//! the clusters get), drift repair at that scale, and the status page's
//! overview and a DIG's status.
//!
//! `cargo bench -p wasmco --bench fleet` (`WASMCO_FLEET_CLUSTERS`,
//! `WASMCO_FLEET_REST_SECS` shorten it; `WASMCO_FLEET_WRAP="heaptrack"`
//! runs the server under a profiler, whose figures are then not wasmco's;
//! `WASMCO_FLEET_HOLD_SECS` keeps it serving that long after the bench).

use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, multipart};
use serde_json::{Value, json};
use wasmco_vcluster::Requests;

const DIGS: usize = 20;
/// The kinds each DIG places, one object of each, and where they live.
const KINDS: [(&str, &str); 5] = [
    ("ConfigMap", "/api/v1/namespaces/default/configmaps"),
    ("Secret", "/api/v1/namespaces/default/secrets"),
    (
        "ServiceAccount",
        "/api/v1/namespaces/default/serviceaccounts",
    ),
    ("Service", "/api/v1/namespaces/default/services"),
    ("Deployment", "/apis/apps/v1/namespaces/default/deployments"),
];
const DRIFTED: usize = 100;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A child process, killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        // Its group: a wrapper's child too.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wasmco args…` (under `wrapper`, a profiler say, when given);
/// the process and the last word of its first line with an address.
fn start(args: &[&str], dir: &Path, wrapper: Option<&str>) -> (Process, String) {
    let wasmco = env!("CARGO_BIN_EXE_wasmco");
    let mut command = match wrapper {
        Some(wrapper) => {
            let mut words = wrapper.split_whitespace();
            let mut command = Command::new(words.next().unwrap_or_default());
            command.args(words).arg(wasmco);
            command
        }
        None => Command::new(wasmco),
    };
    let mut child = command
        .process_group(0)
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("wasmco starts");
    // A wrapper may say something first.
    let mut output = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("http://") {
        line.clear();
        let read = output.read_line(&mut line).expect("its output");
        assert!(read > 0, "wasmco {args:?} ended without an address");
    }
    let last = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_owned();
    (Process(child), last)
}

struct Api {
    client: Client,
    base: String,
}

impl Api {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn send(&self, request: reqwest::blocking::RequestBuilder, expect: u16) -> Value {
        let response = request.send().expect("request");
        let status = response.status().as_u16();
        let body: Value = response.json().unwrap_or(Value::Null);
        assert_eq!(status, expect, "{body}");
        body
    }

    fn post(&self, path: &str, body: Value) -> Value {
        self.send(self.client.post(self.url(path)).json(&body), 201)
    }

    fn upload(&self, path: &str, name: &str, file: Vec<u8>) {
        let form = multipart::Form::new()
            .text("metadata", json!({"metadata": {"name": name}}).to_string())
            .part("file", multipart::Part::bytes(file).file_name("file"));
        self.send(self.client.post(self.url(path)).multipart(form), 201);
    }

    fn get(&self, path: &str) -> Value {
        self.send(self.client.get(self.url(path)), 200)
    }

    /// The answer's size: what the server takes to send it, leaving out
    /// the time this client would take to parse it.
    fn fetch(&self, path: &str) -> usize {
        let response = self.client.get(self.url(path)).send().expect("request");
        assert_eq!(response.status().as_u16(), 200, "{path}");
        response.bytes().expect("a body").len()
    }
}

fn doc(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn manifests(dig: usize) -> Vec<u8> {
    let name = format!("f{dig:02}");
    let objects = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
               "data": {"dig": name, "payload": "x".repeat(200)}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
               "stringData": {"token": format!("secret-of-{name}")}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                                     "spec": {"containers": [{"name": "main",
                                              "image": format!("registry.example/{name}:1")}]}}}}),
    ];
    objects
        .iter()
        .map(|o| format!("---\n{}", serde_norway::to_string(o).expect("yaml")))
        .collect::<String>()
        .into_bytes()
}

/// The provider `fleet` with every cluster labelled `fleet`; their addresses.
fn register_clusters(api: &Api, kubeconfigs: &Path, clusters: usize) -> Vec<String> {
    api.post("/v2/cluster-providers", doc("fleet", json!({})));
    (0..clusters)
        .map(|i| {
            let name = format!("c-{i:04}");
            let kubeconfig =
                std::fs::read(kubeconfigs.join(format!("{name}.kubeconfig"))).expect("kubeconfig");
            let text = String::from_utf8_lossy(&kubeconfig);
            let server = text
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .expect("a server address")
                .to_owned();
            api.upload("/v2/cluster-providers/fleet/clusters", &name, kubeconfig);
            api.post(
                &format!("/v2/cluster-providers/fleet/clusters/{name}/labels"),
                json!({"clusterLabel": "fleet"}),
            );
            server
        })
        .collect()
}

/// DIG `d` of composite app `fNN` placing its one app on every `fleet`
/// cluster, approved; its path.
fn approved_dig(api: &Api, dig: usize) -> String {
    let ca_name = format!("f{dig:02}");
    api.post(
        "/v2/projects/p/composite-apps",
        doc(&ca_name, json!({"compositeAppVersion": "v1"})),
    );
    let ca = format!("/v2/projects/p/composite-apps/{ca_name}/v1");
    api.upload(&format!("{ca}/apps"), "app", manifests(dig));
    api.post(&format!("{ca}/composite-profiles"), doc("prof", json!({})));
    api.post(
        &format!("{ca}/deployment-intent-groups"),
        doc("d", json!({"compositeProfile": "prof", "version": "r1"})),
    );
    let path = format!("{ca}/deployment-intent-groups/d");
    api.post(
        &format!("{path}/generic-placement-intents"),
        doc("gpi", json!({})),
    );
    let everywhere = json!({"allOf": [{"clusterProvider": "fleet", "clusterLabel": "fleet"}]});
    api.post(
        &format!("{path}/generic-placement-intents/gpi/app-intents"),
        doc("app", json!({"app": "app", "intent": everywhere})),
    );
    api.post(
        &format!("{path}/intents"),
        doc("i", json!({"intent": {"genericPlacementIntent": "gpi"}})),
    );
    api.send(api.client.post(api.url(&format!("{path}/approve"))), 202);
    path
}

/// Whether every object of `dig` is Applied and Ready (`objects` of them).
fn converged(api: &Api, dig: &str, objects: u64) -> bool {
    let deployed = api.get(&format!("{dig}/status?output=summary"));
    let ready = api.get(&format!("{dig}/status?status=ready&output=summary"));
    deployed["deployedCounts"]["Applied"].as_u64() == Some(objects)
        && ready["readyCounts"]["Ready"].as_u64() == Some(objects)
}

/// Reconciles that ended settled, as the server's metrics count them.
fn settled_reconciles(api: &Api) -> u64 {
    counter(api, r#"wasmco_rsync_reconciles_total{outcome="settled"}"#)
}

/// The server's counter `series` (its name and labels).
fn counter(api: &Api, series: &str) -> u64 {
    let metrics = api
        .client
        .get(api.url("/metrics"))
        .send()
        .and_then(|r| r.text())
        .unwrap_or_default();
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

/// Cluster jobs resyncs left alone, the watches vouching for them.
fn looks_skipped(api: &Api) -> u64 {
    counter(api, "wasmco_rsync_resync_looks_skipped_total")
}

/// What `/proc` says of a process.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    cpu_ticks: u64,
    rss_kib: u64,
    threads: u64,
    sockets: u64,
}

fn sample(pid: u32) -> Sample {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Past the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let sockets = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
                })
                .count() as u64
        })
        .unwrap_or(0);
    Sample {
        cpu_ticks: field(14).unwrap_or(0) + field(15).unwrap_or(0),
        rss_kib: line("VmRSS:"),
        threads: line("Threads:"),
        sockets,
    }
}

/// The requests the clusters have served so far.
fn requests(client: &Client, stats: &str) -> Requests {
    let answer: Value = client
        .get(format!("http://{stats}/"))
        .send()
        .and_then(|r| r.json())
        .expect("the clusters' stats");
    serde_json::from_value(answer["requests"].clone()).expect("the request counts")
}

fn median_and_p99(mut values: Vec<Duration>) -> (Duration, Duration) {
    values.sort();
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// Deletes `DRIFTED` objects at random on the clusters, one every 20 ms,
/// and times each until it is back.
fn drift(clusters: &[String]) -> Vec<Duration> {
    let client = Client::new();
    let mut watchers = Vec::new();
    let mut picked = std::collections::HashSet::new();
    while picked.len() < DRIFTED.min(clusters.len() * KINDS.len() * DIGS) {
        let cluster = &clusters[fastrand::usize(..clusters.len())];
        let (_, path) = KINDS[fastrand::usize(..KINDS.len())];
        let url = format!("{cluster}{path}/f{:02}", fastrand::usize(..DIGS));
        // Each object once: a second delete before it is back would find nothing.
        if !picked.insert(url.clone()) {
            continue;
        }
        let deleted = client.delete(&url).send().expect("delete");
        assert!(deleted.status().is_success(), "{url}: {}", deleted.status());
        let gone = Instant::now();
        let client = client.clone();
        watchers.push(std::thread::spawn(move || {
            loop {
                if client
                    .get(&url)
                    .send()
                    .is_ok_and(|r| r.status().is_success())
                {
                    return gone.elapsed();
                }
                assert!(
                    gone.elapsed() < Duration::from_secs(600),
                    "{url} never came back"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
        std::thread::sleep(Duration::from_millis(20));
    }
    watchers
        .into_iter()
        .map(|w| w.join().expect("watcher"))
        .collect()
}

fn timed(times: usize, mut call: impl FnMut()) -> Duration {
    let mut taken: Vec<Duration> = (0..times)
        .map(|_| {
            let started = Instant::now();
            call();
            started.elapsed()
        })
        .collect();
    taken.sort();
    taken[times / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let clusters = env_number("WASMCO_FLEET_CLUSTERS", 1000) as usize;
    let rest = Duration::from_secs(env_number("WASMCO_FLEET_REST_SECS", 600));
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfigs = dir.path().join("kubeconfigs");
    let count = clusters.to_string();
    let (_fleet, stats) = start(
        &[
            "virtual-cluster",
            "--count",
            &count,
            "--name",
            "c",
            "--kubeconfig-dir",
            kubeconfigs.to_str().expect("utf-8 path"),
            "--stats-listen",
            "127.0.0.1:0",
        ],
        dir.path(),
        None,
    );
    let stats = stats.trim_start_matches("http://").to_owned();
    let data = dir.path().join("data");
    let (server, base) = start(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        dir.path(),
        std::env::var("WASMCO_FLEET_WRAP").ok().as_deref(),
    );
    let pid = server.0.id();
    let token = std::fs::read_to_string(data.join("admin.token")).expect("token");
    let client = Client::builder()
        .default_headers(
            [(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {}", token.trim()).parse().expect("header"),
            )]
            .into_iter()
            .collect(),
        )
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let api = Api { client, base };
    println!(
        "The fleet at rest: {clusters} virtual clusters (one process), {DIGS} DIGs × {} objects on each \
         ({} objects), wasmco serve in its own process; load average before: {}",
        KINDS.len(),
        clusters * DIGS * KINDS.len(),
        load_average()
    );
    let addresses = register_clusters(&api, &kubeconfigs, clusters);
    api.post("/v2/projects", doc("p", json!({})));
    let digs: Vec<String> = (0..DIGS).map(|i| approved_dig(&api, i)).collect();

    let started = Instant::now();
    for dig in &digs {
        api.send(api.client.post(api.url(&format!("{dig}/instantiate"))), 202);
    }
    let per_dig = (clusters * KINDS.len()) as u64;
    let mut pending: Vec<&String> = digs.iter().collect();
    while !pending.is_empty() {
        pending.retain(|dig| !converged(&api, dig, per_dig));
        assert!(
            started.elapsed() < Duration::from_secs(1800),
            "not converged"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let converge = started.elapsed();
    let at_converge = sample(pid);
    println!(
        "  converge (instantiate of all {DIGS} to every object Applied and Ready): {:.1} s \
         (target ≤ 120 s, ratio {:.2}); RSS then {} MiB",
        converge.as_secs_f64(),
        converge.as_secs_f64() / 120.0,
        at_converge.rss_kib / 1024
    );

    // Ready is not yet at rest: each reconcile still looks for objects to
    // remove on every cluster, and a resync follows it soon to read again
    // what its watches began after. The clock starts once both settled.
    while settled_reconciles(&api) < 2 * DIGS as u64 {
        assert!(started.elapsed() < Duration::from_secs(1800), "not settled");
        std::thread::sleep(Duration::from_millis(250));
    }
    let settle = started.elapsed();
    println!(
        "  settled (every reconcile and the resync after it ended): {:.1} s after the first instantiate",
        settle.as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(5));
    let (first, mut peak) = (sample(pid), sample(pid));
    let requested = requests(&api.client, &stats);
    let (resyncs, skipped) = (settled_reconciles(&api), looks_skipped(&api));
    let ticks = 100.0; // USER_HZ on Linux
    let minutes = (rest.as_secs() / 60).max(1);
    let mut per_minute = Vec::new();
    let mut last = first;
    let rest_started = Instant::now();
    for minute in 1..=minutes {
        while rest_started.elapsed() < rest * minute as u32 / minutes as u32 {
            std::thread::sleep(Duration::from_secs(5));
            let now = sample(pid);
            peak.rss_kib = peak.rss_kib.max(now.rss_kib);
            peak.threads = peak.threads.max(now.threads);
            peak.sockets = peak.sockets.max(now.sockets);
        }
        let now = sample(pid);
        per_minute.push((now.cpu_ticks - last.cpu_ticks) as f64 / ticks);
        last = now;
    }
    let rested = rest_started.elapsed().as_secs_f64();
    let sent = requests(&api.client, &stats) - requested;
    let (resyncs, skipped) = (
        settled_reconciles(&api) - resyncs,
        looks_skipped(&api) - skipped,
    );
    let cpu_share = (last.cpu_ticks - first.cpu_ticks) as f64 / ticks / rested;
    let per_min = |n: u64| n as f64 * 60.0 / rested;
    println!(
        "  at rest for {:.0} s: RSS {} MiB (peak {} MiB; target ≤ 1024, ratio {:.2}), {} threads, {} sockets",
        rested,
        last.rss_kib / 1024,
        peak.rss_kib / 1024,
        peak.rss_kib as f64 / 1024.0 / 1024.0,
        peak.threads,
        peak.sockets
    );
    println!(
        "  at rest: CPU {:.2}% of one core (target ≤ 5%, ratio {:.2}); per minute: {}",
        cpu_share * 100.0,
        cpu_share / 0.05,
        per_minute
            .iter()
            .map(|s| format!("{:.1}%", s / (rested / minutes as f64) * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "  requests to the clusters per minute at rest: {:.0} (probes {:.0}, watches opened {:.0}, others {:.0})",
        per_min(sent.all),
        per_min(sent.version),
        per_min(sent.watches),
        per_min(sent.others()),
    );
    println!(
        "  resyncs at rest: {resyncs}, leaving {skipped} cluster jobs unread (the watches vouched for them)"
    );

    let repaired = drift(&addresses);
    let (p50, p99) = median_and_p99(repaired);
    println!(
        "  drift: {DRIFTED} objects deleted at random, back after p50 {:.3} s, p99 {:.3} s \
         (target p99 ≤ 2 s, ratio {:.2})",
        p50.as_secs_f64(),
        p99.as_secs_f64(),
        p99.as_secs_f64() / 2.0
    );

    let mut overview_bytes = 0;
    let overview = timed(9, || {
        overview_bytes = api.fetch("/v2/overview");
    });
    let status = timed(5, || {
        api.fetch(&format!("{}/status", digs[0]));
    });
    println!(
        "  GET /v2/overview ({:.1} MB): {:.0} ms (target ≤ 200 ms, ratio {:.2}); GET a DIG's status ({} objects): {:.0} ms",
        overview_bytes as f64 / 1e6,
        overview.as_secs_f64() * 1000.0,
        overview.as_secs_f64() / 0.2,
        per_dig,
        status.as_secs_f64() * 1000.0
    );
    println!("  load average after: {}", load_average());
    let hold = env_number("WASMCO_FLEET_HOLD_SECS", 0);
    if hold > 0 {
        // For a profiler: the server as the bench left it.
        println!(
            "  holding {} (token in {}) for {hold} s",
            api.base,
            data.join("admin.token").display()
        );
        std::thread::sleep(Duration::from_secs(hold));
    }
    drop(server);
}
