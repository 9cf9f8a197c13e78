//! Talking to a `wasmco serve` process over HTTP, for the API tests.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use reqwest::blocking::{Client, Response, multipart};
use serde_json::{Value, json};

use crate::store_etcd::Etcd;
use crate::support::guest_path;

/// A `wasmco serve` process on a free loopback port; its requests (through
/// [`Api`]) carry the admin token.
pub struct Server {
    child: Child,
    /// Its own etcd, under its data directory, when the tests run on etcd
    /// (`WASMCO_TEST_STORE=etcd`); ends after the server.
    etcd: Option<Etcd>,
    api: Api,
    pub token: String,
}

/// The API of a server, as one token's holder calls it.
pub struct Api {
    pub base: String,
    /// A client that sends the token.
    pub client: Client,
}

impl std::ops::Deref for Server {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

/// A client sending `Authorization: Bearer <token>`.
pub fn authorised(token: &str) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    Client::builder().default_headers(headers).build().unwrap()
}

impl Server {
    pub fn start(data_dir: &Path) -> Server {
        Self::start_with(data_dir, &[])
    }

    /// [`Self::start`] with more arguments for `wasmco serve`.
    pub fn start_with(data_dir: &Path, extra: &[&str]) -> Server {
        Self::start_with_env(data_dir, extra, &[])
    }

    /// [`Self::start_with`] with environment variables set.
    pub fn start_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        Self::spawn(data_dir, extra, env, Stdio::inherit())
    }

    /// [`Self::start_with_env`] with the server's log (stderr) appended to `log`.
    pub fn start_logged(
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        log: &Path,
    ) -> Server {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("the log file opens");
        Self::spawn(data_dir, extra, env, Stdio::from(file))
    }

    fn spawn(data_dir: &Path, extra: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
        crate::support::helm_renderer();
        // The same tests over etcd: a server's state is where it would be on sled.
        let etcd = (on_etcd() && !extra.contains(&"--store")).then(|| {
            let etcd = Etcd::start_in(&data_dir.join("etcd"));
            drop(etcd.store());
            etcd
        });
        let store = etcd.as_ref().map(Etcd::location);
        let mut child = Command::new(env!("CARGO_BIN_EXE_wasmco"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(store.iter().flat_map(|store| ["--store", store.as_str()]))
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("wasmco serve starts");
        let base = api_address(&mut child);
        let token = std::fs::read_to_string(data_dir.join("admin.token")).expect("the admin token");
        Server {
            child,
            etcd,
            api: Api {
                base,
                client: authorised(token.trim()),
            },
            token: token.trim().to_owned(),
        }
    }

    /// The API as the holder of `token` calls it.
    pub fn as_holder(&self, token: &str) -> Api {
        Api {
            base: self.base.clone(),
            client: authorised(token),
        }
    }
}

impl Api {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn get(&self, path: &str) -> Response {
        self.client.get(self.url(path)).send().unwrap()
    }

    pub fn post(&self, path: &str, body: Value) -> Response {
        self.client.post(self.url(path)).json(&body).send().unwrap()
    }

    pub fn put(&self, path: &str, body: Value) -> Response {
        self.client.put(self.url(path)).json(&body).send().unwrap()
    }

    pub fn delete(&self, path: &str) -> Response {
        self.client.delete(self.url(path)).send().unwrap()
    }

    /// Registers cluster `name` of `provider` (which must exist) with its kubeconfig.
    pub fn register_cluster(&self, provider: &str, name: &str, kubeconfig: &[u8]) {
        expect(
            self.upload(
                &format!("/v2/cluster-providers/{provider}/clusters"),
                doc(name, json!({})),
                Some(kubeconfig.to_vec()),
            ),
            201,
        );
    }

    /// [`Self::register_cluster`], then gives it `labels`.
    pub fn register_labelled(
        &self,
        provider: &str,
        name: &str,
        kubeconfig: &[u8],
        labels: &[&str],
    ) {
        self.register_cluster(provider, name, kubeconfig);
        for label in labels {
            expect(
                self.post(
                    &format!("/v2/cluster-providers/{provider}/clusters/{name}/labels"),
                    json!({"clusterLabel": label}),
                ),
                201,
            );
        }
    }

    /// Uploads the shipped controller `file` as action controller `name`.
    pub fn upload_action(&self, name: &str, priority: u32, file: &str) {
        expect(
            self.upload(
                "/v2/controllers",
                doc(name, json!({"type": "action", "priority": priority})),
                Some(wasm(file)),
            ),
            201,
        );
    }

    pub fn upload(&self, path: &str, metadata: Value, file: Option<Vec<u8>>) -> Response {
        self.upload_as(reqwest::Method::POST, path, metadata, file)
    }

    /// [`Self::upload`] as a PUT: the resource at `path` replaced.
    pub fn upload_put(&self, path: &str, metadata: Value, file: Option<Vec<u8>>) -> Response {
        self.upload_as(reqwest::Method::PUT, path, metadata, file)
    }

    fn upload_as(
        &self,
        method: reqwest::Method,
        path: &str,
        metadata: Value,
        file: Option<Vec<u8>>,
    ) -> Response {
        let mut form = multipart::Form::new().text("metadata", metadata.to_string());
        if let Some(file) = file {
            form = form.part("file", multipart::Part::bytes(file).file_name("file"));
        }
        self.client
            .request(method, self.url(path))
            .multipart(form)
            .send()
            .unwrap()
    }

    /// `PUT` as multipart, with a new file.
    pub fn replace_upload(&self, path: &str, metadata: Value, file: Vec<u8>) -> Response {
        let form = multipart::Form::new()
            .text("metadata", metadata.to_string())
            .part("file", multipart::Part::bytes(file).file_name("file"));
        self.client
            .put(self.url(path))
            .multipart(form)
            .send()
            .unwrap()
    }

    /// `PUT` as multipart, with only the `metadata` part (the file is kept).
    pub fn put_metadata(&self, path: &str, metadata: Value) -> Response {
        let form = multipart::Form::new().text("metadata", metadata.to_string());
        self.client
            .put(self.url(path))
            .multipart(form)
            .send()
            .unwrap()
    }
}

impl Server {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no chance to flush anything it had not flushed already.
    pub fn kill(mut self) {
        self.sigkill();
    }

    /// SIGKILL, and waits until the process is gone (its store lock with
    /// it; on etcd, its etcd too, whose data stays for the next start).
    pub fn sigkill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        if let Some(etcd) = &mut self.etcd {
            etcd.kill();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(etcd) = &mut self.etcd {
            etcd.kill();
        }
    }
}

/// Whether the tests run their servers on etcd (`WASMCO_TEST_STORE=etcd`).
fn on_etcd() -> bool {
    std::env::var("WASMCO_TEST_STORE").as_deref() == Ok("etcd")
}

/// How to open, in this process, the state a (stopped) test server on
/// `data_dir` kept: its sled directory, or its etcd started again, which
/// lives as long as the returned guard.
pub fn stored_state(data_dir: &Path) -> (wasmco::startup::HostOptions, Option<Etcd>) {
    if !on_etcd() {
        return (wasmco::startup::HostOptions::default(), None);
    }
    let etcd = Etcd::start_in(&data_dir.join("etcd"));
    drop(etcd.store());
    let options = wasmco::startup::HostOptions {
        store: Some(wasmco::startup::StoreLocation::Etcd(vec![
            etcd.endpoint.clone(),
        ])),
        ..Default::default()
    };
    (options, Some(etcd))
}

/// Sends `head` as is and returns what the server answers before closing.
pub fn raw_request(server: &Server, head: &str) -> String {
    use std::io::{Read, Write};
    let addr = server.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // The token goes in as the first header after the request line.
    let head = head.replacen(
        "\r\n",
        &format!("\r\nAuthorization: Bearer {}\r\n", server.token),
        1,
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&answer).contains("}") {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// The most memory process `pid` has held (VmHWM), in KiB.
pub fn peak_memory_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name),
    )
    .unwrap()
}

pub fn wasm(file: &str) -> Vec<u8> {
    std::fs::read(guest_path(file)).unwrap()
}

#[track_caller]
pub fn expect(response: Response, status: u16) -> Value {
    let got = response.status().as_u16();
    let text = response.text().unwrap();
    assert_eq!(got, status, "body: {text}");
    if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

/// Issues a scoped token through the admin's API; its secret.
pub fn issue_token(
    server: &Server,
    name: &str,
    projects: &[&str],
    role: &str,
    expires: &str,
) -> String {
    let body = expect(
        server.post(
            "/v2/tokens",
            json!({"metadata": {"name": name}, "spec": {"projects": projects, "role": role, "expires": expires}}),
        ),
        201,
    );
    body["status"]["token"].as_str().unwrap().to_owned()
}

/// A 4xx whose JSON body names `field` and says something containing `words`.
#[track_caller]
pub fn refused(response: Response, status: u16, field: Option<&str>, words: &str) {
    let body = expect(response, status);
    assert_eq!(body["field"].as_str(), field, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(words), "{words:?} not in {message:?}");
}

/// Project `p` with composite app `ca` version `v1`.
pub fn project_with_app(server: &Server) {
    expect(server.post("/v2/projects", doc("p", json!({}))), 201);
    expect(
        server.post(
            "/v2/projects/p/composite-apps",
            doc("ca", json!({"compositeAppVersion": "v1"})),
        ),
        201,
    );
}

pub fn doc(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "description": format!("{name} for tests")}, "spec": spec})
}

/// A `wasmco virtual-cluster` process.
pub struct Virtual {
    child: Child,
    pub base: String,
    pub kubeconfig: Vec<u8>,
    pub kubeconfig_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Virtual {
    pub fn start(name: &str) -> Virtual {
        Self::start_slow(name, 0)
    }

    /// A cluster that takes `latency_ms` for every request.
    pub fn start_slow(name: &str, latency_ms: u64) -> Virtual {
        Self::start_with(name, latency_ms, 100)
    }

    /// A cluster whose workloads take `ready_ms` to become ready.
    pub fn start_with(name: &str, latency_ms: u64, ready_ms: u64) -> Virtual {
        Self::spawn(
            name,
            latency_ms,
            ready_ms,
            "127.0.0.1:0",
            tempfile::tempdir().unwrap(),
        )
    }

    /// Stops the cluster and starts an empty one on the same address, as
    /// a cluster that restarts without its storage would.
    pub fn restart_empty(&mut self, name: &str) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let listen = self.base.trim_start_matches("http://").to_owned();
        let mut restarted = Self::spawn(name, 0, 100, &listen, tempfile::tempdir().unwrap());
        // The old process (dead) and directory go with `restarted`.
        std::mem::swap(&mut self.child, &mut restarted.child);
        std::mem::swap(&mut self._dir, &mut restarted._dir);
        self.kubeconfig = std::mem::take(&mut restarted.kubeconfig);
        self.kubeconfig_path = restarted.kubeconfig_path.clone();
    }

    fn spawn(
        name: &str,
        latency_ms: u64,
        ready_ms: u64,
        listen: &str,
        dir: tempfile::TempDir,
    ) -> Virtual {
        let path = dir.path().join("kubeconfig");
        let latency = latency_ms.to_string();
        let ready = ready_ms.to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_wasmco"))
            .args([
                "virtual-cluster",
                "--listen",
                listen,
                "--ready-after-ms",
                &ready,
                "--latency-ms",
                &latency,
                "--name",
                name,
                "--kubeconfig",
            ])
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let line = first_line(&mut child);
        let base = line.trim().rsplit(' ').next().unwrap().to_owned();
        let kubeconfig = std::fs::read(&path).unwrap();
        Virtual {
            child,
            base,
            kubeconfig,
            kubeconfig_path: path,
            _dir: dir,
        }
    }

    /// Sends a request as is.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<String>,
    ) -> Response {
        let mut request =
            Client::new().request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.header("content-type", content_type).body(body);
        }
        request.send().unwrap()
    }

    /// The object at `path`, if it exists.
    pub fn object(&self, path: &str) -> Option<Value> {
        let response = Client::new()
            .get(format!("{}{path}", self.base))
            .send()
            .unwrap();
        (response.status() == 200).then(|| response.json().unwrap())
    }
}

impl Drop for Virtual {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first line a child (started with its stdout piped) prints: where a
/// server says it listens.
pub fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reads the address line");
    line
}

/// The address a `wasmco serve` child says its API listens on.
pub fn api_address(child: &mut Child) -> String {
    let line = first_line(child);
    line.trim()
        .strip_prefix("wasmco API listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned()
}
