//! sled and etcd side by side, and how fast hosts on etcd take over a dead
//! host's work.
//!
//! `cargo bench -p wasmco --bench hosts`
//!
//! One real etcd (built by `tests/kube/build.sh`, on a loopback port). For
//! each store, in this process: instantiate at scale (10 apps x 1,000
//! clusters x 5 resources, generic placement plus gac), REST GETs over real
//! sockets (one item, a 100-item list: both served from the cache the
//! store's watch keeps fresh) and POST throughput (each create serialised
//! across hosts). Then two `wasmco serve` hosts on etcd share 30 targets;
//! ten times, the one owning more is killed (`kill -9`) and the time until
//! the survivor owns them all is measured, and a fresh host joins again.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

mod support;

use support::{Phase, create, load};
use wasmco::startup::{self, HostOptions, StoreLocation};
use wasmco_core::Kind;

const CLUSTERS: usize = 1_000;
const CONNECTIONS: usize = 32;
const PHASE: Duration = Duration::from_secs(3);
const POSTERS: usize = 8;
const TARGETS: usize = 30;
const KILLS: usize = 10;
const LEASE_TTL: Duration = Duration::from_secs(10);
const TARGET_INSTANTIATE_RATIO: f64 = 3.0;
const TARGET_TAKEOVER: Duration = Duration::from_secs(15);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A single-member etcd on loopback ports, ending with the bench.
struct Etcd {
    child: Child,
    endpoint: String,
    _dir: tempfile::TempDir,
}

impl Etcd {
    fn start() -> Etcd {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/kube/build.sh");
        let built = Command::new("bash")
            .arg(script)
            .stderr(Stdio::inherit())
            .output()
            .expect("tests/kube/build.sh runs");
        assert!(built.status.success(), "tests/kube/build.sh failed");
        let binaries = PathBuf::from(String::from_utf8_lossy(&built.stdout).trim());
        let dir = tempfile::tempdir().expect("temp dir");
        let endpoint = format!("http://127.0.0.1:{}", free_port());
        let child = Command::new(binaries.join("etcd"))
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--client-url={endpoint}"))
            .arg(format!("--peer-url=http://127.0.0.1:{}", free_port()))
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while wasmco_store::EtcdStore::connect(std::slice::from_ref(&endpoint))
            .and_then(|store| wasmco_store::KvStore::get(&store, b"ping"))
            .is_err()
        {
            assert!(Instant::now() < deadline, "etcd does not answer");
            std::thread::sleep(Duration::from_millis(100));
        }
        Etcd {
            child,
            endpoint,
            _dir: dir,
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one store measured.
struct Figures {
    instantiate: Duration,
    get_one: Phase,
    get_list: Phase,
    posts_per_second: f64,
}

fn measure(data: &Path, store: StoreLocation) -> Figures {
    let options = HostOptions {
        store: Some(store),
        ..Default::default()
    };
    let state = startup::open_state(data, None, options).expect("state");
    let dig = support::approved_dig_at_scale(&state, CLUSTERS);
    let started = Instant::now();
    state
        .orchestrator
        .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
        .expect("instantiate");
    let instantiate = started.elapsed();

    create(
        &state.db,
        Kind::ClusterProvider,
        &["bench"],
        json!({}),
        None,
    );
    for i in 0..100 {
        let name = format!("cluster-{i:03}");
        create(&state.db, Kind::Cluster, &["bench", &name], json!({}), None);
    }
    let token = format!("Bearer {}", state.admin_token);
    let (_server, addr) = support::serve(state);
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let get =
        |path: &'static str| client.block_on(load(CONNECTIONS, PHASE, addr, path, token.clone()));
    let get_one = get("/v2/cluster-providers/bench/clusters/cluster-042");
    let get_list = get("/v2/cluster-providers/bench/clusters");
    let posts_per_second = posts(&format!("http://{addr}"), &token);
    Figures {
        instantiate,
        get_one,
        get_list,
        posts_per_second,
    }
}

/// Projects created per second by [`POSTERS`] clients for [`PHASE`].
fn posts(base: &str, token: &str) -> f64 {
    let deadline = Instant::now() + PHASE;
    let created: usize = std::thread::scope(|scope| {
        let posters: Vec<_> = (0..POSTERS)
            .map(|poster| {
                scope.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    let mut created = 0;
                    while Instant::now() < deadline {
                        let body = json!({"metadata": {"name": format!("p{poster}-{created}")}, "spec": {}});
                        let status = client
                            .post(format!("{base}/v2/projects"))
                            .header("authorization", token)
                            .json(&body)
                            .send()
                            .expect("POST")
                            .status();
                        assert_eq!(status, 201);
                        created += 1;
                    }
                    created
                })
            })
            .collect();
        posters.into_iter().map(|p| p.join().expect("poster")).sum()
    });
    created as f64 / PHASE.as_secs_f64()
}

/// A `wasmco serve` host on etcd.
struct Host {
    child: Child,
    id: String,
    base: String,
    token: String,
    _dir: tempfile::TempDir,
}

impl Host {
    fn start(etcd: &Etcd, id: &str, master_key: &Path) -> Host {
        let dir = tempfile::tempdir().expect("temp dir");
        let location = format!("etcd://{}", etcd.endpoint.trim_start_matches("http://"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_wasmco"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--store", &location])
            .arg("--data-dir")
            .arg(dir.path())
            .env("WASMCO_HOST_ID", id)
            .env("WASMCO_MASTER_KEY_FILE", master_key)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("wasmco serve starts");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the address line");
        let base = line.trim().rsplit(' ').next().expect("address").to_owned();
        let token = std::fs::read_to_string(dir.path().join("admin.token")).expect("token");
        Host {
            child,
            id: id.to_owned(),
            base,
            token: token.trim().to_owned(),
            _dir: dir,
        }
    }

    /// Host id → how many targets it owns, from this host's side.
    fn ownership(&self) -> Vec<(String, usize)> {
        let hosts: serde_json::Value = reqwest::blocking::Client::new()
            .get(format!("{}/v2/hosts", self.base))
            .bearer_auth(&self.token)
            .send()
            .and_then(|r| r.json())
            .unwrap_or_default();
        hosts
            .as_array()
            .map(|hosts| {
                hosts
                    .iter()
                    .map(|h| {
                        let owned = h["targets"].as_array().map_or(0, Vec::len);
                        (h["id"].as_str().unwrap_or_default().to_owned(), owned)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `hosts` (all alive) own the `targets` between them, each
/// some; the ids and counts.
fn settled(hosts: &[Host], targets: usize) -> Vec<(String, usize)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ownership = hosts[0].ownership();
        let total: usize = ownership.iter().map(|(_, n)| n).sum();
        if ownership.len() == hosts.len()
            && total == targets
            && ownership.iter().all(|(_, n)| *n > 0)
        {
            return ownership;
        }
        assert!(
            Instant::now() < deadline,
            "no settled ownership: {ownership:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The takeover time of each of [`KILLS`] kills, the hosts sharing the
/// store's `master_key`.
fn takeovers(etcd: &Etcd, master_key: &Path) -> Vec<Duration> {
    let store =
        wasmco_store::EtcdStore::connect(std::slice::from_ref(&etcd.endpoint)).expect("etcd store");
    let contexts = wasmco_store::appcontext::ContextStore::new(Arc::new(store));
    for i in 0..TARGETS {
        let mut state = wasmco_store::appcontext::DigState::created();
        state.enter(wasmco_store::appcontext::DeployState::Approved, 0);
        contexts
            .put_state(&format!("bench/takeover/v1/t{i:02}"), &state, None)
            .expect("a target");
    }
    // With the DIG the side-by-side run left.
    let targets = contexts.states().expect("the targets").len();
    let mut hosts = vec![
        Host::start(etcd, "host-0", master_key),
        Host::start(etcd, "host-1", master_key),
    ];
    let mut times = Vec::new();
    for kill in 0..KILLS {
        let ownership = settled(&hosts, targets);
        let busiest = ownership
            .iter()
            .max_by_key(|(_, n)| *n)
            .map(|(id, _)| id.clone())
            .expect("a host");
        let index = hosts.iter().position(|h| h.id == busiest).expect("busiest");
        let victim = hosts.remove(index);
        drop(victim);
        let killed = Instant::now();
        loop {
            let ownership = hosts[0].ownership();
            let total: usize = ownership.iter().map(|(_, n)| n).sum();
            if total == targets && ownership.iter().all(|(id, _)| *id != busiest) {
                break;
            }
            assert!(killed.elapsed() < Duration::from_secs(60), "no takeover");
            std::thread::sleep(Duration::from_millis(50));
        }
        times.push(killed.elapsed());
        hosts.push(Host::start(etcd, &format!("host-{}", kill + 2), master_key));
    }
    times
}

fn ratio_line(name: &str, sled: f64, etcd: f64, unit: &str) {
    println!(
        "  {name:<34} sled {sled:>10.1} {unit:<6} etcd {etcd:>10.1} {unit:<6} etcd/sled {:.2}",
        etcd / sled
    );
}

fn main() {
    let etcd = Etcd::start();
    let sled_data = tempfile::tempdir().expect("temp dir");
    let sled = measure(
        sled_data.path(),
        StoreLocation::Sled(sled_data.path().join("db")),
    );
    let etcd_data = tempfile::tempdir().expect("temp dir");
    let on_etcd = measure(
        etcd_data.path(),
        StoreLocation::Etcd(vec![etcd.endpoint.clone()]),
    );
    println!(
        "sled and etcd side by side (instantiate {} apps x {CLUSTERS} clusters; GETs over {CONNECTIONS} connections, {POSTERS} POSTing clients, {}s per phase):",
        support::APPS,
        PHASE.as_secs()
    );
    let instantiate_ratio = on_etcd.instantiate.as_secs_f64() / sled.instantiate.as_secs_f64();
    ratio_line(
        "instantiate",
        sled.instantiate.as_secs_f64() * 1e3,
        on_etcd.instantiate.as_secs_f64() * 1e3,
        "ms",
    );
    println!(
        "  {:<34} {:.2}x the {TARGET_INSTANTIATE_RATIO:.0}x bound",
        "instantiate etcd/sled",
        instantiate_ratio / TARGET_INSTANTIATE_RATIO
    );
    ratio_line(
        "GET one cluster",
        sled.get_one.rate(),
        on_etcd.get_one.rate(),
        "req/s",
    );
    ratio_line(
        "GET 100-cluster list",
        sled.get_list.rate(),
        on_etcd.get_list.rate(),
        "req/s",
    );
    ratio_line(
        "GET one cluster p99",
        sled.get_one.p99.as_secs_f64() * 1e3,
        on_etcd.get_one.p99.as_secs_f64() * 1e3,
        "ms",
    );
    ratio_line(
        "POST a project",
        sled.posts_per_second,
        on_etcd.posts_per_second,
        "req/s",
    );

    let mut times = takeovers(&etcd, &etcd_data.path().join("master.key"));
    times.sort_unstable();
    let median = times[times.len() / 2];
    println!(
        "takeover after kill -9, {KILLS} kills, lease TTL {}s: median {:.1} s, slowest {:.1} s ({:.2}x the {}s bound)",
        LEASE_TTL.as_secs(),
        median.as_secs_f64(),
        times[times.len() - 1].as_secs_f64(),
        median.as_secs_f64() / TARGET_TAKEOVER.as_secs_f64(),
        TARGET_TAKEOVER.as_secs()
    );
}
