//! GET throughput and latency of the REST API over real sockets.
//!
//! `cargo bench -p wasmco --bench api_get`
//!
//! The server runs in this process on its own runtime (as `wasmco serve`
//! does, over sled on disk); the load generator is 64 keep-alive HTTP/1.1
//! connections driven by hyper on one thread, so the machine's two cores are
//! split between them. Each phase runs for a fixed time.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::json;

mod support;

use support::create;
use wasmco::api;
use wasmco::db::ResourceDb;
use wasmco::model::Kind;

const CONNECTIONS: usize = 64;
const PHASE: Duration = Duration::from_secs(5);
const TARGET_RPS: f64 = 30_000.0;
const TARGET_P99: Duration = Duration::from_millis(5);

fn populate(db: &ResourceDb) {
    create(db, Kind::ClusterProvider, &["edge"], json!({}), None);
    for i in 0..100 {
        let name = format!("cluster-{i:03}");
        create(db, Kind::Cluster, &["edge", &name], json!({}), None);
    }
}

struct Phase {
    requests: u64,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
}

async fn load(addr: std::net::SocketAddr, path: &'static str, token: String) -> Phase {
    let deadline = Instant::now() + PHASE;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
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

fn report(name: &str, phase: &Phase) {
    let rps = phase.requests as f64 / phase.elapsed.as_secs_f64();
    println!(
        "  {name:<28} {rps:>9.0} req/s ({:.2}x the {TARGET_RPS:.0} target)  p50 {:>6.2} ms  p99 {:>6.2} ms ({:.2}x the 5 ms bound)",
        rps / TARGET_RPS,
        phase.p50.as_secs_f64() * 1e3,
        phase.p99.as_secs_f64() * 1e3,
        phase.p99.as_secs_f64() / TARGET_P99.as_secs_f64(),
    );
}

fn main() {
    let data = tempfile::tempdir().expect("temp dir");
    let state = api::open_state(data.path(), None).expect("state");
    let state_token = state.admin_token.clone();
    populate(&state.db);

    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let listener = server
        .block_on(api::bind("127.0.0.1:0".parse().expect("addr")))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    server.spawn(async move { api::serve(state, listener).await });

    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    println!(
        "REST API GET, {CONNECTIONS} connections, {}s per phase, server on 1 worker thread:",
        PHASE.as_secs()
    );
    let token = format!("Bearer {}", state_token);
    let one = client.block_on(load(
        addr,
        "/v2/cluster-providers/edge/clusters/cluster-042",
        token.clone(),
    ));
    report("GET one cluster", &one);
    let list = client.block_on(load(addr, "/v2/cluster-providers/edge/clusters", token));
    report("GET 100-cluster list", &list);
}
