//! The store over a real etcd (built from the Go module by
//! tests/kube/build.sh, on loopback ports): the same conformance suite as
//! sled's, and what etcd refuses said as such.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use wasmco_store::{BatchOp, EtcdStore, KvStore};

use crate::kube_apiserver::{free_port, spawn};
use crate::support::wait::{eventually, wait_until};

/// A single-member etcd of its own, ending with the test.
pub struct Etcd {
    child: Child,
    /// Where its data and log are.
    home: PathBuf,
    _temporary: Option<tempfile::TempDir>,
    args: Vec<String>,
    pub endpoint: String,
}

impl Etcd {
    pub fn start() -> Etcd {
        Self::start_with("http", &[])
    }

    /// Served over TLS with `certificate` and `key`, asking clients for a
    /// certificate from `client_ca` (all PEM files).
    pub fn start_tls(certificate: &Path, key: &Path, client_ca: &Path) -> Etcd {
        Self::start_with(
            "https",
            &[
                format!("--cert-file={}", certificate.display()),
                format!("--key-file={}", key.display()),
                format!("--trusted-ca-file={}", client_ca.display()),
            ],
        )
    }

    /// With its data in `home` (kept after it ends, found again by the
    /// next one started there), on fresh ports.
    pub fn start_in(home: &Path) -> Etcd {
        Self::launch(home.to_owned(), None, "http", &[])
    }

    fn start_with(scheme: &str, extra: &[String]) -> Etcd {
        let temporary = tempfile::tempdir().unwrap();
        Self::launch(temporary.path().to_owned(), Some(temporary), scheme, extra)
    }

    fn launch(
        home: PathBuf,
        temporary: Option<tempfile::TempDir>,
        scheme: &str,
        extra: &[String],
    ) -> Etcd {
        std::fs::create_dir_all(&home).unwrap();
        // A free port may be taken by another test before etcd binds it:
        // then etcd exits, and starts again on other ports.
        for _ in 0..5 {
            let port = free_port();
            let endpoint = format!("{scheme}://127.0.0.1:{port}");
            let mut args = vec![
                format!("--data-dir={}", home.join("data").display()),
                format!("--client-url={endpoint}"),
                format!("--peer-url=http://127.0.0.1:{}", free_port()),
            ];
            args.extend_from_slice(extra);
            let mut child = spawn("etcd", &args, &home.join("etcd.log"));
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Etcd {
                        child,
                        home,
                        _temporary: temporary,
                        args,
                        endpoint,
                    };
                }
                if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!(
            "etcd did not start; its log: {}",
            std::fs::read_to_string(home.join("etcd.log")).unwrap_or_default()
        );
    }

    /// Kills it (`kill -9`); its data stays.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on its data and ports.
    pub fn restart(&mut self) {
        self.child = spawn("etcd", &self.args, &self.home.join("etcd.log"));
    }

    /// `--store` for it.
    pub fn location(&self) -> String {
        let host = self.endpoint.rsplit("://").next().unwrap_or_default();
        format!("etcd://{host}")
    }

    /// A store on it, once it answers.
    pub fn store(&self) -> EtcdStore {
        eventually("etcd to answer", Duration::from_secs(60), || {
            EtcdStore::connect(std::slice::from_ref(&self.endpoint))
                .and_then(|store| store.get(b"ping").map(|_| store))
        })
    }
}

#[test]
fn an_etcd_store_behaves_as_every_store_must() {
    let etcd = Etcd::start();
    let store = etcd.store();
    wasmco_store::conformance::check_store(&store);
    assert!(store.size_on_disk().unwrap() > 0);
    assert!(
        store.scan_prefix(b"\0chunks/").unwrap().is_empty(),
        "the big values' chunks went with them"
    );
}

#[test]
fn a_batch_larger_than_one_etcd_transaction_is_refused_whole() {
    let etcd = Etcd::start();
    let store = etcd.store();
    let ops: Vec<BatchOp> = (0..200)
        .map(|i| BatchOp::Put(format!("k/{i}").into_bytes(), b"v".to_vec()))
        .collect();
    let error = store.batch(ops).unwrap_err().to_string();
    assert!(error.contains("at most 128"), "{error}");
    assert!(
        store.scan_prefix(b"k/").unwrap().is_empty(),
        "nothing half-written"
    );
}

#[test]
fn a_host_on_etcd_keeps_its_state_there_not_in_its_data_directory() {
    use serde_json::json;

    use crate::support::server::{Server, doc, expect};
    let etcd = Etcd::start();
    drop(etcd.store());
    let store = etcd.location();
    let first = tempfile::tempdir().unwrap();
    let server = Server::start_with(first.path(), &["--store", &store]);
    expect(server.post("/v2/projects", doc("shared", json!({}))), 201);
    drop(server);
    // Another host, another data directory, the same etcd (and master key).
    let second = tempfile::tempdir().unwrap();
    let key = first.path().join("master.key");
    let other = Server::start_with_env(
        second.path(),
        &["--store", &store],
        &[("WASMCO_MASTER_KEY_FILE", key.to_str().unwrap())],
    );
    let projects = expect(other.get("/v2/projects"), 200);
    let names: Vec<&str> = projects
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["shared"]);
}

#[test]
fn while_etcd_is_away_the_api_answers_503_and_recovers_when_it_is_back() {
    use serde_json::json;

    use crate::support::server::{Server, doc, expect};
    let mut etcd = Etcd::start();
    drop(etcd.store());
    let store = etcd.location();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--store", &store]);
    expect(server.post("/v2/projects", doc("before", json!({}))), 201);
    etcd.kill();
    let answer = server.post("/v2/projects", doc("during", json!({})));
    assert_eq!(answer.status(), 503, "{}", answer.text().unwrap());
    etcd.restart();
    wait_until("the host to recover", Duration::from_secs(30), || {
        let answer = server.post("/v2/projects", doc("after", json!({})));
        if answer.status() == 201 {
            return true;
        }
        assert_eq!(answer.status(), 503, "only unavailable while it comes back");
        false
    });
    // Nothing acknowledged was lost; nothing refused was kept.
    let names: Vec<String> = expect(server.get("/v2/projects"), 200)
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, ["after", "before"]);
}

/// Values past what etcd takes in one request (1.5 MiB unless raised)
/// are kept in chunks: a 10 MiB chart uploads, reads back whole, deploys,
/// and what it replaces leaves no chunk behind.
#[test]
fn a_chart_larger_than_etcd_takes_in_one_request_works_on_etcd() {
    use serde_json::json;

    use crate::deploy::action;
    use crate::support::clusters::approved_dig_on_solo;
    use crate::support::server::{Server, Virtual, doc, expect, project_with_app};
    let etcd = Etcd::start();
    let store = etcd.store();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--store", &etcd.location()]);
    let cluster = Virtual::start("solo");
    expect(
        server.post("/v2/cluster-providers", doc("lab", json!({}))),
        201,
    );
    server.register_cluster("lab", "solo", &cluster.kubeconfig);
    project_with_app(&server);
    let ca = "/v2/projects/p/composite-apps/ca/v1";
    // 10 MiB of files the chart carries (`.Files`; Helm takes files of
    // up to 5 MiB), hard to compress, and one template.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut noise = || {
        let mut text = String::with_capacity(4 << 20);
        while text.len() < (7 << 20) / 2 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(&format!("{seed:016x}"));
        }
        text
    };
    let noise = [noise(), noise(), noise()];
    let total: usize = noise.iter().map(String::len).sum();
    let chart = crate::helm::tgz(&[
        (
            "big/Chart.yaml",
            "apiVersion: v2\nname: big\nversion: 0.1.0\n",
        ),
        ("big/files/a.txt", &noise[0]),
        ("big/files/b.txt", &noise[1]),
        ("big/files/c.txt", &noise[2]),
        (
            "big/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  size: \"{{ add (len (.Files.Get \"files/a.txt\")) (len (.Files.Get \"files/b.txt\")) (len (.Files.Get \"files/c.txt\")) }}\"\n",
        ),
    ]);
    assert!(chart.len() > 4 << 20, "{}", chart.len());
    expect(
        server.upload(
            &format!("{ca}/apps"),
            doc("big", json!({})),
            Some(chart.clone()),
        ),
        201,
    );
    let file_keys = || store.scan_prefix(b"\0chunks/").unwrap().len();
    assert!(file_keys() >= 4, "the chart is kept in chunks");
    let dig = approved_dig_on_solo(&server, ca, &["big"]);
    expect(action(&server, &dig, "instantiate"), 202);
    wait_until("the chart deployed", Duration::from_secs(60), || {
        cluster
            .object("/api/v1/namespaces/default/configmaps/big")
            .is_some()
    });
    let deployed = cluster
        .object("/api/v1/namespaces/default/configmaps/big")
        .unwrap();
    assert_eq!(deployed["data"]["size"], total.to_string());
    // Replaced by a small app: its chunks go with it.
    expect(action(&server, &dig, "terminate"), 202);
    let small = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\n".to_vec();
    eventually(
        "the small app to replace the chart",
        Duration::from_secs(60),
        || {
            let answer = server.replace_upload(
                &format!("{ca}/apps/big"),
                doc("big", json!({})),
                small.clone(),
            );
            if answer.status() == 200 {
                Ok(())
            } else {
                // Refused while the terminated DIG still deletes what it made.
                Err(format!("{:?}", answer.text()))
            }
        },
    );
    assert_eq!(file_keys(), 0, "the replaced chart's chunks are gone");
}
