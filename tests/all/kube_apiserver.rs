//! A real Kubernetes API server and its etcd on loopback ports, for the
//! scenarios that hold rsync (and the virtual cluster) to the real thing.
//!
//! The binaries come from `tests/kube/build.sh` (the Go modules pinned
//! there, cached under `~/.cache/wasmco-kube`); the certificates from
//! wasmco's own PKI: the bootstrap bundle kubeadm would get, and an
//! admin.kubeconfig for the clients.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where the build script put kube-apiserver, etcd and kubectl (built on
/// first use; cached across runs).
pub fn binaries() -> &'static Path {
    static BINARIES: OnceLock<PathBuf> = OnceLock::new();
    BINARIES.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kube/build.sh");
        let built = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .expect("bash runs tests/kube/build.sh");
        assert!(
            built.status.success(),
            "tests/kube/build.sh failed (it needs Go and the Go module proxy)"
        );
        PathBuf::from(String::from_utf8_lossy(&built.stdout).trim())
    })
}

/// The kubectl built from the same modules.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(binaries().join("kubectl"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("kubectl runs")
}

/// A running API server with its etcd; both end with the test process.
pub struct ApiServer {
    etcd: Child,
    apiserver: Child,
    /// What it was started with, to start it again on the same port.
    apiserver_args: Vec<String>,
    dir: PathBuf,
    pub kubeconfig: Vec<u8>,
    pub kubeconfig_path: PathBuf,
    /// Its certificates, kubeadm's names: `ca.crt` and `ca.key` among them.
    #[allow(
        dead_code,
        reason = "the tests read it; the bench sharing this file does not"
    )]
    pub pki: PathBuf,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free loopback port")
}

/// Starts `binary` with `args`, its output to `log`, ending when this
/// process does (its stdin is a pipe only we hold).
pub fn spawn(binary: &str, args: &[String], log: &Path) -> Child {
    let log = std::fs::File::create(log).expect("the log file");
    Command::new(binaries().join(binary))
        .args(args)
        .env("WASMCO_EXIT_WITH_STDIN", "1")
        .stdin(Stdio::piped())
        .stdout(log.try_clone().expect("the log file"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{binary} starts: {e}"))
}

fn unpack(bundle: &[u8], into: &Path) {
    tar::Archive::new(flate2::read::GzDecoder::new(bundle))
        .unpack(into)
        .expect("the bootstrap bundle unpacks");
}

fn tail(log: &Path) -> String {
    let mut text = String::new();
    let _ = std::fs::File::open(log).and_then(|mut f| f.read_to_string(&mut text));
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl ApiServer {
    /// The one API server the test process shares (started on first use).
    pub fn shared() -> &'static ApiServer {
        static SHARED: OnceLock<ApiServer> = OnceLock::new();
        SHARED.get_or_init(|| ApiServer::start("kube-apiserver"))
    }

    /// An API server of the caller's own (for a scenario that needs
    /// several clusters), its files in `CARGO_TARGET_TMPDIR/<dir>`.
    /// etcd and kube-apiserver on fresh ports, with the admin's kubeconfig.
    fn launch(dir: &Path, pki: &wasmco_pki::ClusterPki, certs: &Path) -> (ApiServer, PathBuf) {
        let file = |name: &str| certs.join(name).display().to_string();
        let (etcd_port, peer_port, api_port) = (free_port(), free_port(), free_port());
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let _ = std::fs::remove_dir_all(dir.join("etcd"));
        let etcd = spawn(
            "etcd",
            &[
                format!("--data-dir={}", dir.join("etcd").display()),
                format!("--client-url={etcd_url}"),
                format!("--peer-url=http://127.0.0.1:{peer_port}"),
            ],
            &dir.join("etcd.log"),
        );
        let log = dir.join("kube-apiserver.log");
        let apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={api_port}"),
            format!("--cert-dir={}", dir.join("certs").display()),
            format!("--tls-cert-file={}", file("apiserver.crt")),
            format!("--tls-private-key-file={}", file("apiserver.key")),
            format!("--client-ca-file={}", file("ca.crt")),
            format!("--service-account-key-file={}", file("sa.pub")),
            format!("--service-account-signing-key-file={}", file("sa.key")),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
            "--authorization-mode=RBAC".into(),
            "--profiling=false".into(),
            // The "kubernetes" Service's endpoints cannot be a loopback address.
            "--endpoint-reconciler-type=none".into(),
        ];
        let apiserver = spawn("kube-apiserver", &apiserver_args, &log);
        let kubeconfig = pki
            .admin_kubeconfig("real", &format!("https://127.0.0.1:{api_port}"))
            .unwrap();
        let kubeconfig_path = dir.join("admin.kubeconfig");
        std::fs::write(&kubeconfig_path, &kubeconfig).unwrap();
        let server = ApiServer {
            etcd,
            apiserver,
            apiserver_args,
            dir: dir.to_owned(),
            kubeconfig: kubeconfig.into_bytes(),
            kubeconfig_path,
            pki: certs.to_owned(),
        };
        (server, log)
    }

    /// Waits for `/readyz`; why not, when etcd or the server exits or 120 s
    /// pass (both processes are then stopped), and whether one exited.
    fn wait_ready(&mut self, log: &Path) -> Result<Instant, (String, bool)> {
        let started = Instant::now();
        loop {
            let ready = kubectl(&self.kubeconfig_path, &["get", "--raw", "/readyz"]);
            if ready.status.success() {
                return Ok(started);
            }
            let exited = matches!(self.apiserver.try_wait(), Ok(Some(_)))
                || matches!(self.etcd.try_wait(), Ok(Some(_)));
            if exited || started.elapsed() > Duration::from_secs(120) {
                let _ = self.apiserver.kill();
                let _ = self.etcd.kill();
                let _ = self.apiserver.wait();
                let _ = self.etcd.wait();
                let reason = format!("kube-apiserver not ready:\n{}", tail(log));
                return Err((reason, exited));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Kills the API server and leaves its etcd (so its objects): a
    /// cluster whose control plane went down.
    #[allow(
        dead_code,
        reason = "the failover test's; the bench sharing this file has none"
    )]
    pub fn kill_apiserver(&mut self) {
        let _ = self.apiserver.kill();
        let _ = self.apiserver.wait();
    }

    /// Starts the API server again over the same etcd and on the same port
    /// (the one its clients' kubeconfig names), and waits until it is ready.
    #[allow(
        dead_code,
        reason = "the failover test's; the bench sharing this file has none"
    )]
    pub fn restart_apiserver(&mut self) {
        let log = self.dir.join("kube-apiserver.restarted.log");
        self.apiserver = spawn("kube-apiserver", &self.apiserver_args, &log);
        let started = Instant::now();
        while !kubectl(&self.kubeconfig_path, &["get", "--raw", "/readyz"])
            .status
            .success()
        {
            let exited = matches!(self.apiserver.try_wait(), Ok(Some(_)));
            assert!(
                !exited && started.elapsed() < Duration::from_secs(120),
                "kube-apiserver did not come back:\n{}",
                tail(&log)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    pub fn start(dir: &str) -> ApiServer {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pki = wasmco_pki::ClusterPki::create("real").unwrap();
        let bundle = pki
            .bootstrap_bundle("node", &["127.0.0.1".to_owned()])
            .unwrap();
        let certs = dir.join("pki");
        unpack(&bundle, &certs);
        // A port found free may be taken before the server binds it (the
        // other tests start servers too): then it exits, and is started
        // again on other ports.
        let mut attempt = 0;
        let (server, started) = loop {
            attempt += 1;
            let (mut server, log) = Self::launch(&dir, &pki, &certs);
            match server.wait_ready(&log) {
                Ok(started) => break (server, started),
                Err((reason, true)) if attempt < 3 => {
                    eprintln!("kube-apiserver attempt {attempt} exited, again: {reason}");
                }
                Err((reason, _)) => panic!("{reason}"),
            }
        };
        // The default namespace is made by a controller in the server, a
        // moment after it is ready. Polled here rather than with
        // `support::wait`: benches/reconcile.rs builds this file without it.
        while !kubectl(&server.kubeconfig_path, &["get", "namespace", "default"])
            .status
            .success()
        {
            assert!(started.elapsed() < Duration::from_secs(120));
            std::thread::sleep(Duration::from_millis(250));
        }
        eprintln!("kube-apiserver ready in {:?}", started.elapsed());
        server
    }
}
