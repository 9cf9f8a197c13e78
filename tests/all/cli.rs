//! The newcomer path end to end: `wasmco dev` as a process, the CLI as a
//! user runs it, the examples applied unchanged, and the clusters read back.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::blocking::Client;
use serde_json::Value;

use crate::support::guest_path;
use crate::support::wait::{eventually, wait_until};

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A `wasmco dev` process with its data in a temporary directory.
pub(crate) struct Dev {
    child: Child,
    server: String,
    data: tempfile::TempDir,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Dev {
    pub(crate) fn start() -> Dev {
        let data = tempfile::tempdir().unwrap();
        let data_dir = data.path().to_str().unwrap().to_owned();
        Self::spawn(data, &repo(), &["--data-dir", &data_dir])
    }

    /// `wasmco dev` run from `cwd` with `args`, `data` kept with it.
    fn spawn(data: tempfile::TempDir, cwd: &Path, args: &[&str]) -> Dev {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wasmco"))
            .args(["dev", "--listen", "127.0.0.1:0", "--ready-after-ms", "200"])
            .args(args)
            .current_dir(cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("wasmco dev starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().unwrap();
        let collected = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                collected.lock().unwrap().push(line);
            }
        });
        let mut dev = Dev {
            child,
            server: String::new(),
            data,
            lines,
        };
        let first = dev.wait_for_line("wasmco dev: API on ", Duration::from_secs(60));
        dev.server = first.trim_start_matches("wasmco dev: API on ").to_owned();
        dev.wait_for_line("wasmco dev is running", Duration::from_secs(60));
        dev
    }

    fn wait_for_line(&self, start: &str, timeout: Duration) -> String {
        eventually(format!("a line starting {start:?}"), timeout, || {
            let lines = self.lines.lock().unwrap();
            match lines.iter().find(|l| l.starts_with(start)) {
                Some(line) => Ok(line.clone()),
                None => Err(format!("{lines:#?}")),
            }
        })
    }

    /// Runs the CLI against this server from the repository's root, with
    /// the token `wasmco dev` wrote.
    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        let token = std::fs::read_to_string(self.data.path().join("admin.token")).unwrap();
        wasmco(&[&["--server", &self.server, "--token", token.trim()], args].concat())
    }

    /// [`Self::cli`], which must succeed; its stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        succeeded(args, self.cli(args))
    }

    /// Dev cluster `n`'s kubeconfig, as `wasmco dev` wrote it.
    pub(crate) fn kubeconfig_path(&self, n: u32) -> PathBuf {
        self.data
            .path()
            .join(format!("clusters/dev-{n}.kubeconfig"))
    }

    /// The `kind` objects (`apis/apps/v1/deployments`) in dev cluster `n`.
    pub(crate) fn objects(&self, n: u32, collection: &str) -> Vec<Value> {
        let kubeconfig = std::fs::read_to_string(self.kubeconfig_path(n)).unwrap();
        let server = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .unwrap();
        let list: Value = Client::new()
            .get(format!("{server}/{collection}"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    pub(crate) fn names(&self, n: u32, collection: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .objects(n, collection)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }

    /// The server holds no project.
    pub(crate) fn assert_no_projects(&self) {
        let projects = self.ok(&["get", "projects", "-o", "json"]);
        assert_eq!(
            serde_json::from_str::<Value>(&projects).unwrap(),
            serde_json::json!([])
        );
    }

    /// Every dev cluster holds no deployment, service or config map.
    pub(crate) fn assert_clusters_empty(&self) {
        for n in 1..=3 {
            for collection in [
                "apis/apps/v1/deployments",
                "api/v1/services",
                "api/v1/configmaps",
            ] {
                assert_eq!(
                    self.names(n, collection),
                    Vec::<String>::new(),
                    "dev-{n} {collection}"
                );
            }
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// componentize-py's and componentize-js's paths, installed (pinned) by
/// `tests/sdk/toolchains.sh` once per machine.
pub(crate) fn toolchains() -> &'static [String; 2] {
    static PATHS: std::sync::OnceLock<[String; 2]> = std::sync::OnceLock::new();
    PATHS.get_or_init(|| {
        let output = Command::new("bash")
            .arg(repo().join("tests/sdk/toolchains.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("bash runs");
        assert!(output.status.success(), "the controller toolchains install");
        let text = String::from_utf8(output.stdout).unwrap();
        let mut lines = text.lines().map(str::to_owned);
        [lines.next().unwrap(), lines.next().unwrap()]
    })
}

/// The stdout of `wasmco args…`, which must have succeeded.
fn succeeded(args: &[&str], output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "wasmco {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// [`wasmco`], which must succeed; its stdout.
pub(crate) fn wasmco_ok(args: &[&str]) -> String {
    succeeded(args, wasmco(args))
}

pub(crate) fn wasmco(args: &[&str]) -> Output {
    let [componentize_py, componentize_js] = toolchains();
    Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(args)
        .env("WASMCO_COMPONENTIZE_PY", componentize_py)
        .env("WASMCO_COMPONENTIZE_JS", componentize_js)
        .current_dir(repo())
        // Controller crates build beside the tests' own target dir, whose lock
        // the running `cargo test` may hold.
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("controllers"),
        )
        .env_remove("WASMCO_SERVER")
        .env("WASMCO_CONFIG", "/nonexistent")
        .output()
        .expect("wasmco runs")
}

#[test]
fn an_ephemeral_dev_server_lets_the_cli_in_from_another_shell() {
    let shell = tempfile::tempdir().unwrap();
    let here = shell.path().to_owned();
    let dev = Dev::spawn(shell, &here, &["--ephemeral"]);
    let line = dev.wait_for_line(
        "  token         export WASMCO_TOKEN=",
        Duration::from_secs(5),
    );
    let token = line
        .split("WASMCO_TOKEN=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let file = here.join(".wasmco/ephemeral.token");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), token);
    // Another shell in the same directory, no token given: the CLI finds it.
    let listed = Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args([
            "--server",
            &dev.server,
            "get",
            "clusters",
            "--provider",
            "dev",
        ])
        .current_dir(&here)
        .env_remove("WASMCO_TOKEN")
        .env("WASMCO_CONFIG", "/nonexistent")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success() && stdout.contains("dev-1"),
        "{stdout}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    // Ctrl-C: the token goes with the server.
    let stopped = Command::new("kill")
        .args(["-INT", &dev.child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    wait_until(
        "the token to go with the server",
        Duration::from_secs(20),
        || !file.exists(),
    );
}

#[test]
fn hello_deploys_by_label_and_terminates_through_the_cli() {
    let dev = Dev::start();
    let applied = dev.ok(&["apply", "-f", "examples/hello"]);
    assert!(applied.contains("instantiate"), "{applied}");
    let status = dev.ok(&["status", "hello", "--timeout", "60s"]);
    assert!(status.contains("hello 4/4 ready"), "{status}");
    // The DIG table says what an operator looks for.
    let digs = dev.ok(&[
        "get",
        "digs",
        "--project",
        "hello",
        "--composite-app",
        "hello-app",
        "--composite-app-version",
        "v1",
    ]);
    let row = digs
        .lines()
        .find(|l| l.trim_start().starts_with("hello"))
        .unwrap_or_default();
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        columns[..4],
        ["hello", "Instantiated", "1", "4/4"],
        "{digs}"
    );
    assert!(
        columns[4].ends_with('s') || columns[4].ends_with('m'),
        "{digs}"
    );
    // Placement by label: both edge clusters, not the core one.
    assert_eq!(dev.names(1, "apis/apps/v1/deployments"), ["hello"]);
    assert_eq!(dev.names(2, "apis/apps/v1/deployments"), ["hello"]);
    assert!(dev.names(3, "apis/apps/v1/deployments").is_empty());

    // Applying again changes nothing and fails nothing.
    let again = dev.ok(&["apply", "-f", "examples/hello"]);
    assert!(again.contains("updated"), "{again}");

    dev.ok(&["terminate", "hello"]);
    let status = dev.ok(&["status", "hello", "--timeout", "60s"]);
    assert!(status.contains("Terminated"), "{status}");
    dev.assert_clusters_empty();
    // An action the DIG's state refuses is a failure, not a skip.
    let update = dev.data.path().join("update.yaml");
    let anchor = "projects/hello/composite-apps/hello-app/v1/deployment-intent-groups/hello/update";
    std::fs::write(
        &update,
        format!("version: emco/v2\nresourceContext:\n  anchor: {anchor}\n"),
    )
    .unwrap();
    let refused = dev.cli(&["apply", "-f", update.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success(), "{out}");
    assert!(
        out.contains("failed") && out.contains("Terminated"),
        "{out}"
    );
    let deleted = dev.ok(&["delete", "-f", "examples/hello"]);
    assert!(deleted.contains("deleted"), "{deleted}");
    dev.assert_no_projects();
}

#[test]
fn emcos_single_cluster_flow_runs_unchanged_in_a_standard_logical_cloud() {
    let dev = Dev::start();
    let flow = [
        "1-prerequisites.yaml",
        "2-prerequisites-lc-standard.yaml",
        "3-instantiate-lc.yaml",
        "4-test-helm.yaml",
    ];
    let values = "examples/emco-flow/values.yaml";
    let mut applied = String::new();
    for file in flow {
        let path = format!("examples/emco-flow/{file}");
        applied += &dev.ok(&["apply", "-f", &path, "-v", values]);
    }
    // EMCO's rsync given by host and port is noted as built in; nothing
    // is left out.
    let left_out: Vec<&str> = applied
        .lines()
        .filter(|l| l.starts_with("unsupported"))
        .collect();
    assert_eq!(left_out.len(), 0, "{applied}");
    assert!(
        applied.contains("skipped     controllers")
            && applied.contains("rsync is built into wasmco"),
        "{applied}"
    );
    let status = dev.ok(&["status", "web-dig", "--timeout", "60s"]);
    assert!(status.contains("frontend"), "{status}");
    // In the cloud's namespace, on its one cluster, signed by that cluster.
    assert!(
        !dev.names(1, "apis/apps/v1/namespaces/ns1/deployments")
            .is_empty(),
        "{status}"
    );
    assert_eq!(
        dev.names(1, "apis/apps/v1/namespaces/default/deployments"),
        Vec::<String>::new()
    );
    assert_eq!(
        dev.names(2, "apis/apps/v1/deployments"),
        Vec::<String>::new()
    );
    let requests = dev.objects(1, "apis/certificates.k8s.io/v1/certificatesigningrequests");
    let request = requests
        .iter()
        .find(|r| {
            r["metadata"]["name"]
                == wasmco_core::cloud::cloud_object_name("proj1", "lc1", "user-csr")
        })
        .expect("dev-1 got user-1's certificate request");
    assert!(
        request["status"]["certificate"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{request}"
    );
    // And undone in EMCO's order: each file deleted, last one first.
    for file in flow.iter().rev() {
        let path = format!("examples/emco-flow/{file}");
        dev.ok(&["delete", "-f", &path, "-v", values]);
    }
    dev.assert_no_projects();
    dev.assert_clusters_empty();
}

#[test]
fn vfw_keeps_dependency_order_anyof_and_the_gac_patch() {
    let dev = Dev::start();
    dev.ok(&["apply", "-f", "examples/vfw", "-s"]);
    let status = dev.ok(&["status", "vfw", "--timeout", "60s"]);
    assert!(status.contains("packetgen 4/4 ready"), "{status}");
    // anyOf keeps the group's first cluster: dev-2, not dev-3.
    assert!(
        dev.names(2, "apis/apps/v1/deployments")
            .contains(&"firewall".to_owned())
    );
    assert_eq!(dev.names(3, "apis/apps/v1/deployments"), ["sink"]);
    // gac patched packetgen on dev-1 only.
    let replicas = |n| {
        dev.objects(n, "apis/apps/v1/deployments")
            .into_iter()
            .find(|d| d["metadata"]["name"] == "packetgen")
            .map(|d| d["spec"]["replicas"].clone())
    };
    assert_eq!(replicas(1), Some(serde_json::json!(2)));
    assert_eq!(replicas(2), Some(serde_json::json!(1)));
    let deleted = dev.ok(&["delete", "-f", "examples/vfw"]);
    assert!(deleted.contains("terminated"), "{deleted}");
    dev.assert_clusters_empty();
}

#[test]
fn the_helm_example_deploys_two_charts_with_profile_values_overrides_and_a_hook() {
    let dev = Dev::start();
    dev.ok(&["apply", "-f", "examples/helm"]);
    dev.ok(&["status", "shop", "--timeout", "60s"]);
    for n in [1, 2] {
        let deployments = dev.objects(n, "apis/apps/v1/deployments");
        let field = |name: &str, pointer: &str| {
            deployments
                .iter()
                .find(|d| d["metadata"]["name"] == name)
                .and_then(|d| d.pointer(pointer).cloned())
        };
        // Chart, then profile (replicas), then the DIG's --set values.
        assert_eq!(
            field("r1-frontend", "/spec/replicas"),
            Some(serde_json::json!(2))
        );
        let image = "/spec/template/spec/containers/0/image";
        assert_eq!(
            field("r1-frontend", image),
            Some(serde_json::json!("nginx:1.27"))
        );
        assert_eq!(
            field("r1-backend", "/spec/replicas"),
            Some(serde_json::json!(2))
        );
        assert_eq!(dev.names(n, "apis/batch/v1/jobs"), ["r1-backend-migrate"]);
        let page = dev
            .objects(n, "api/v1/configmaps")
            .into_iter()
            .find(|c| c["metadata"]["name"] == "r1-frontend-page")
            .expect("the page");
        assert_eq!(
            page["data"]["index.html"],
            "Hello from r1, placed by wasmco"
        );
    }
    assert!(dev.names(3, "apis/apps/v1/deployments").is_empty());
    dev.ok(&["delete", "-f", "examples/helm"]);
    dev.assert_clusters_empty();
    assert!(
        dev.names(1, "apis/batch/v1/jobs").is_empty(),
        "the hook's Job is removed"
    );
}

#[test]
fn custom_controller_is_built_uploaded_and_used() {
    let dev = Dev::start();
    dev.ok(&["apply", "-f", "examples/custom-controller", "-s"]);
    dev.ok(&["status", "checkout", "--timeout", "60s"]);
    for n in [2, 3] {
        for object in dev
            .objects(n, "apis/apps/v1/deployments")
            .into_iter()
            .chain(dev.objects(n, "api/v1/configmaps"))
        {
            assert_eq!(object["metadata"]["labels"]["team"], "payments", "{object}");
        }
    }
    assert!(dev.names(1, "apis/apps/v1/deployments").is_empty());
    let list = dev.ok(&["controller", "list"]);
    assert!(
        list.contains("team-labels") && list.contains("action"),
        "{list}"
    );
    dev.ok(&["delete", "-f", "examples/custom-controller"]);
    dev.assert_clusters_empty();
}

#[test]
fn examples_controller_is_the_template_but_for_the_repositorys_sdk_and_contract() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("team-labels");
    let made = wasmco(&[
        "controller",
        "new",
        "team-labels",
        "--type",
        "action",
        "--dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(made.status.success());
    let example = repo().join("examples/custom-controller/controller");
    // Where a new crate keeps its copies, the example names the originals.
    let to_originals = |text: String| {
        text.replace(
            r#"wasmco-guest = { path = "sdk" }"#,
            r#"wasmco-guest = { path = "../../../sdk" }"#,
        )
        .replace(r#"path: "wit" }"#, r#"path: "../../../wit" }"#)
    };
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "fixture.json",
        ".cargo/config.toml",
    ] {
        assert_eq!(
            to_originals(std::fs::read_to_string(fresh.join(file)).unwrap()),
            std::fs::read_to_string(example.join(file)).unwrap(),
            "{file} differs: regenerate the example with `wasmco controller new`, \
             then point it at the repository's sdk/ and wit/"
        );
    }
    for copy in ["sdk", "wit"] {
        assert!(fresh.join(copy).is_dir(), "a new crate carries {copy}/");
        assert!(
            !example.join(copy).exists(),
            "the example keeps no copy of {copy}/: it uses the repository's"
        );
    }
}

#[test]
fn examples_controller_builds_and_runs_on_the_repositorys_sdk_and_contract() {
    let example = repo().join("examples/custom-controller/controller");
    let built = wasmco_ok(&["controller", "build", example.to_str().unwrap()]);
    let wasm = built.trim();
    assert!(wasm.ends_with("team_labels.wasm"), "{wasm}");
    let cache = tempfile::tempdir().unwrap();
    let fixture = example.join("fixture.json");
    let report: Value = serde_json::from_str(&wasmco_ok(&[
        "controller",
        "test",
        wasm,
        "--input",
        fixture.to_str().unwrap(),
        "--cache-dir",
        cache.path().to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(
        report["edits"],
        serde_json::json!([{"patch": {"app": "web", "clusters": "all", "target": "Deployment/web",
                                      "mergePatch": {"metadata": {"labels": {"team": "payments"}}}}}])
    );
    // The SDK cargo resolves is the repository's, through the example's
    // own lock file as it stands.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let pkgid = Command::new(cargo)
        .args(["pkgid", "--locked", "--offline", "--manifest-path"])
        .arg(example.join("Cargo.toml"))
        .arg("wasmco-guest")
        .output()
        .unwrap();
    assert!(
        pkgid.status.success(),
        "{}",
        String::from_utf8_lossy(&pkgid.stderr)
    );
    let pkgid = String::from_utf8_lossy(&pkgid.stdout);
    let sdk = repo().join("sdk").canonicalize().unwrap();
    assert!(
        pkgid.starts_with(&format!("path+file://{}#wasmco-guest@", sdk.display())),
        "{pkgid}"
    );
}

#[test]
fn a_new_placement_controller_builds_and_runs_against_its_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let crate_dir = dir.path().join("avoid-maintenance");
    let crate_arg = crate_dir.to_str().unwrap();
    let made = wasmco(&[
        "controller",
        "new",
        "avoid-maintenance",
        "--type",
        "placement",
        "--dir",
        crate_arg,
    ]);
    assert!(made.status.success(), "{made:?}");
    let built = wasmco(&["controller", "build", crate_arg]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let wasm = String::from_utf8_lossy(&built.stdout).trim().to_owned();
    assert!(wasm.ends_with("avoid_maintenance.wasm"), "{wasm}");
    let fixture = crate_dir.join("fixture.json");
    let cache = dir.path().join("cache");
    let tested = wasmco(&[
        "controller",
        "test",
        &wasm,
        "--input",
        fixture.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    assert!(
        tested.status.success(),
        "{}",
        String::from_utf8_lossy(&tested.stderr)
    );
    let report: Value = serde_json::from_slice(&tested.stdout).unwrap();
    assert_eq!(
        report["edits"],
        serde_json::json!([{"unplace": {"app": "web", "clusters": ["dev/dev-2"]}}])
    );
    // The same crate again is refused, not overwritten.
    let again = wasmco(&[
        "controller",
        "new",
        "avoid-maintenance",
        "--type",
        "placement",
        "--dir",
        crate_arg,
    ]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}

#[test]
fn a_fixture_gives_a_controller_that_asks_for_nodes_its_clusters_nodes() {
    // hpa-placement declares `needs: ["nodes"]`: the fixture's nodes reach
    // it in the request's node table. Each app is on every cluster (allOf),
    // so a cluster without room fails the call, naming it and why.
    let dir = tempfile::tempdir().unwrap();
    let node = |cpu: i64| serde_json::json!({"name": "n1", "available": {"cpu": cpu}});
    let fixture = |clusters: Value| {
        serde_json::json!({
            "clusters": clusters,
            "apps": [{"name": "web", "manifests": [{"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}]}],
            "intent": {"name": "hpa", "intents": [], "all": [{"kind": "hpa intent",
                "metadata": {"name": "hpa"}, "spec": {"app": "web"},
                "children": {"hpa-resource-consumers": [{"kind": "hpa resource consumer",
                    "metadata": {"name": "web"},
                    "spec": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "container": "web"},
                    "children": {"resource-requirements": [{"kind": "hpa resource requirement",
                        "metadata": {"name": "cpu"},
                        "spec": {"allocatable": true, "resource": {"name": "cpu", "requests": 2}}}]}}]}}]}
        })
    };
    let test = |name: &str, clusters: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, fixture(clusters).to_string()).unwrap();
        wasmco(&[
            "controller",
            "test",
            guest_path("hpa_placement.wasm").to_str().unwrap(),
            "--input",
            path.to_str().unwrap(),
            "--cache-dir",
            dir.path().join("cache").to_str().unwrap(),
        ])
    };
    let roomy = test(
        "roomy.json",
        serde_json::json!([{"provider": "dev", "name": "big", "nodes": [node(4)]}]),
    );
    assert!(
        roomy.status.success(),
        "{}",
        String::from_utf8_lossy(&roomy.stderr)
    );
    let report: Value = serde_json::from_slice(&roomy.stdout).unwrap();
    assert_eq!(report["edits"], serde_json::json!([]));
    let tight = test(
        "tight.json",
        serde_json::json!([{"provider": "dev", "name": "big", "nodes": [node(4)]},
                           {"provider": "dev", "name": "small", "nodes": [node(1)]}]),
    );
    assert!(!tight.status.success());
    let stderr = String::from_utf8_lossy(&tight.stderr);
    assert!(
        stderr.contains("dev+small of app web (allOf)")
            && stderr.contains("needs cpu 2 free on one node"),
        "{stderr}"
    );
}

#[test]
fn hot_reload_registers_replaces_and_reports_bad_components() {
    let dev = Dev::start();
    let controllers = dev.data.path().join("controllers");
    std::fs::copy(guest_path("gac.wasm"), controllers.join("my-gac.wasm")).unwrap();
    dev.wait_for_line(
        "hot reload: registered action controller my-gac",
        Duration::from_secs(30),
    );
    std::fs::write(controllers.join("broken.wasm"), b"not a component").unwrap();
    dev.wait_for_line("hot reload: broken", Duration::from_secs(30));
    let line = dev.wait_for_line("hot reload: broken", Duration::ZERO);
    assert!(line.contains("refused"), "{line}");
    std::fs::copy(guest_path("gac.wasm"), controllers.join("my-gac.wasm")).unwrap();
    dev.wait_for_line(
        "hot reload: reloaded action controller my-gac",
        Duration::from_secs(30),
    );
    let list = dev.ok(&["get", "controllers", "-o", "yaml"]);
    assert!(
        list.contains("my-gac") && !list.contains("broken"),
        "{list}"
    );
}

#[test]
fn errors_a_person_can_act_on() {
    // Nothing listening: the address and the way out.
    let refused = wasmco(&["--server", "http://127.0.0.1:9", "get", "projects"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("127.0.0.1:9") && stderr.contains("wasmco dev"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let dev = Dev::start();
    // A kind under a parent needs the parent.
    let missing = dev.cli(&["get", "clusters"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--provider"));
    let table = dev.ok(&["get", "clusters", "--provider", "dev"]);
    assert!(
        table.contains("dev-1") && table.contains("dev-3") && table.contains("STATE"),
        "{table}"
    );
    assert!(
        table.contains("LABELS") && table.contains("east,edge") && table.contains("core,west"),
        "{table}"
    );
    // Each cluster's health, once its first probe answered.
    eventually("every cluster reachable", Duration::from_secs(20), || {
        let table = dev.ok(&["get", "clusters", "--provider", "dev"]);
        if table.matches("Reachable").count() == 3 {
            Ok(())
        } else {
            Err(table)
        }
    });

    // EMCO files with what wasmco lacks: named, the rest applied; -s stops.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("emco.yaml");
    std::fs::write(
        &file,
        "version: emco/v2\nresourceContext: {anchor: controllers}\nmetadata: {name: rsync}\n\
         spec: {host: rsync, port: 9031}\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects/p1/logical-clouds/lc/ovn}\nmetadata: {name: x}\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: p1}\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects/p1/composite-apps}\nmetadata: {name: ca}\n\
         spec: {compositeAppVersion: v1}\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects/p1/composite-apps/ca/v1/deployment-intent-groups}\n\
         metadata: {name: d}\nspec: {compositeProfile: nope, version: r1}\n",
    )
    .unwrap();
    let stopped = dev.cli(&["apply", "-s", "-f", file.to_str().unwrap()]);
    assert!(!stopped.status.success());
    assert!(
        dev.ok(&["get", "projects"])
            .lines()
            .all(|l| !l.contains("p1"))
    );

    let applied = dev.cli(&["apply", "-f", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&applied.stdout);
    assert!(
        stdout.contains("skipped     controllers") && stdout.contains("rsync is built into wasmco"),
        "{stdout}"
    );
    assert!(
        stdout.contains("projects/p1/logical-clouds/lc/ovn"),
        "{stdout}"
    );
    assert!(
        stdout.contains("created     projects/p1/composite-apps/ca/v1"),
        "{stdout}"
    );
    // The DIG names a profile that does not exist: the server's message and field.
    assert!(!applied.status.success());
    assert!(
        stdout.contains("failed") && stdout.contains("(field `"),
        "{stdout}"
    );
    assert!(stdout.contains("nope"), "{stdout}");
}
