//! GET throughput and latency of the REST API over real sockets.
//!
//! `cargo bench -p wasmco --bench api_get`
//!
//! The server runs in this process on its own runtime (as `wasmco serve`
//! does, over sled on disk); the load generator is 64 keep-alive HTTP/1.1
//! connections driven by hyper on one thread, so the machine's two cores are
//! split between them. Each phase runs for a fixed time.
//!
//! A last phase measures GET latency while four more clients upload the
//! nastiest files in a loop (YAML nested 40,000 deep, a gzip bomb): their
//! parsing runs on the bounded work pool, never on the async workers.

use std::time::Duration;

use serde_json::json;

mod support;

use support::{Phase, load};

const CONNECTIONS: usize = 64;
const PHASE: Duration = Duration::from_secs(5);
const TARGET_RPS: f64 = 30_000.0;
const TARGET_P99: Duration = Duration::from_millis(5);
const TARGET_P99_UNDER_UPLOADS: Duration = Duration::from_millis(50);
const UPLOADERS: usize = 4;
const APPS: &str = "/v2/projects/p/composite-apps/ca/v1/apps";

/// A `.tgz` of one file of `size` spaces: small, and huge unpacked.
fn gzip_bomb(size: u64) -> Vec<u8> {
    use std::io::Read;
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(encoder);
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "bomb.yaml", std::io::repeat(b' ').take(size))
        .expect("tar");
    tar.into_inner().expect("tar").finish().expect("gzip")
}

/// Threads uploading nasty files until `stop` is set; answers how many
/// uploads they made.
fn upload_storm(
    base: String,
    token: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<std::thread::JoinHandle<u64>> {
    let nested = format!("{}{}", "[".repeat(40_000), "]".repeat(40_000)).into_bytes();
    let bomb = gzip_bomb(256 << 20);
    (0..UPLOADERS)
        .map(|i| {
            let file = if i % 2 == 0 {
                nested.clone()
            } else {
                bomb.clone()
            };
            let (url, token, stop) = (format!("{base}{APPS}"), token.clone(), stop.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::new();
                let mut sent = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let metadata = json!({"metadata": {"name": "nasty"}, "spec": {}});
                    let form = reqwest::blocking::multipart::Form::new()
                        .text("metadata", metadata.to_string())
                        .part(
                            "file",
                            reqwest::blocking::multipart::Part::bytes(file.clone()).file_name("f"),
                        );
                    let status = client
                        .post(&url)
                        .header("authorization", &token)
                        .multipart(form)
                        .send()
                        .expect("upload")
                        .status();
                    assert!(status == 400 || status == 503, "{status}");
                    sent += 1;
                }
                sent
            })
        })
        .collect()
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
    let target = support::serve_for_gets();
    let (addr, client) = (target.addr, &target.client);
    println!(
        "REST API GET, {CONNECTIONS} connections, {}s per phase, server on 1 worker thread:",
        PHASE.as_secs()
    );
    let token = target.token.clone();
    let one = client.block_on(load(
        CONNECTIONS,
        PHASE,
        addr,
        "/v2/cluster-providers/edge/clusters/cluster-042",
        token.clone(),
    ));
    report("GET one cluster", &one);
    let list = client.block_on(load(
        CONNECTIONS,
        PHASE,
        addr,
        "/v2/cluster-providers/edge/clusters",
        token.clone(),
    ));
    report("GET 100-cluster list", &list);

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let storm = upload_storm(format!("http://{addr}"), token.clone(), stop.clone());
    std::thread::sleep(Duration::from_millis(500));
    let under = client.block_on(load(
        CONNECTIONS,
        PHASE,
        addr,
        "/v2/cluster-providers/edge/clusters/cluster-042",
        token,
    ));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let uploads: u64 = storm.into_iter().map(|t| t.join().expect("uploader")).sum();
    println!(
        "  GET one cluster while {UPLOADERS} clients upload nested YAML and gzip bombs ({uploads} uploads refused): p50 {:.2} ms  p99 {:.2} ms ({:.2}x the 50 ms bound)",
        under.p50.as_secs_f64() * 1e3,
        under.p99.as_secs_f64() * 1e3,
        under.p99.as_secs_f64() / TARGET_P99_UNDER_UPLOADS.as_secs_f64(),
    );
}
