//! The status page at `/ui`, in Debian's headless Chromium driven through
//! chromedriver: sign in, watch the hello example's grid turn Ready, open a
//! cell's resources, see a cluster go Unreachable. Screenshots are kept in
//! cargo's `tmp/ui-artifacts`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::kube_apiserver::free_port;
use crate::support::server::{Server, Virtual, doc, expect};
use crate::support::wait::{eventually, eventually_async};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the screenshots are left for whoever looks at the run.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A chromedriver process on a free loopback port.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Driver {
        let setup = Command::new("bash")
            .arg(repo().join("tests/ui/browser.sh"))
            .status()
            .expect("bash runs");
        assert!(setup.success(), "chromium and chromedriver are needed");
        let port = free_port();
        let child = Command::new("chromedriver")
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let url = format!("http://127.0.0.1:{port}");
        eventually("chromedriver to answer", Duration::from_secs(30), || {
            reqwest::blocking::get(format!("{url}/status"))
        });
        Driver { child, url }
    }

    async fn browser(&self) -> Client {
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,900"],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a browser session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `script` (a function body returning JSON) until `done` holds of
/// its answer; the last answer.
async fn until(browser: &Client, what: &str, script: &str, done: impl Fn(&Value) -> bool) -> Value {
    let done = &done;
    eventually_async(what, Duration::from_secs(90), || async move {
        let answer = browser
            .execute(script, vec![])
            .await
            .expect("the script runs");
        if done(&answer) {
            Ok(answer)
        } else {
            Err(answer)
        }
    })
    .await
}

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = artifacts().join(name);
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

async fn click(browser: &Client, target: Locator<'_>) {
    browser.find(target).await.unwrap().click().await.unwrap();
}

async fn sign_in(browser: &Client, token: &str) {
    let field = browser
        .wait()
        .for_element(Locator::Id("token"))
        .await
        .unwrap();
    // Present is not yet typeable while the page lays out: CI once caught
    // the field there but not interactable.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Err(error) = field.send_keys(token).await {
        assert!(
            std::time::Instant::now() < deadline,
            "the token field: {error}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    click(browser, Locator::Css("#login button[type=submit]")).await;
}

async fn open_tab(browser: &Client, tab: &str) {
    click(
        browser,
        Locator::Css(&format!("#tabs button[data-tab={tab}]")),
    )
    .await;
}

const CELLS: &str = "return [...document.querySelectorAll('#deployments td.cell')]
    .map(c => ({cluster: c.dataset.cluster, state: c.dataset.state}));";

/// The three clusters `wasmco dev` would give, as processes of their own so
/// that one can be stopped: dev-1 and dev-2 labelled edge, dev-3 core.
fn dev_like_clusters(server: &Server) -> Vec<Virtual> {
    expect(
        server.post(
            "/v2/cluster-providers",
            json!({"metadata": {"name": "dev"}}),
        ),
        201,
    );
    ["dev-1", "dev-2", "dev-3"]
        .into_iter()
        .zip(["edge", "edge", "core"])
        .map(|(name, label)| {
            let cluster = Virtual::start(name);
            server.register_cluster("dev", name, &cluster.kubeconfig);
            expect(
                server.post(
                    &format!("/v2/cluster-providers/dev/clusters/{name}/labels"),
                    json!({"clusterLabel": label}),
                ),
                201,
            );
            cluster
        })
        .collect()
}

fn apply_hello(server: &Server) {
    let output = Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(["--server", &server.base, "--token", &server.token])
        .args(["apply", "-f", "examples/hello"])
        .current_dir(repo())
        .env_remove("WASMCO_SERVER")
        .env("WASMCO_CONFIG", "/nonexistent")
        .output()
        .expect("wasmco runs");
    assert!(
        output.status.success(),
        "apply failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_status_page_follows_a_deployment_and_a_cluster_going_away() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let mut clusters = dev_like_clusters(&server);
    // The page loads without a token; what it shows needs one.
    let page = reqwest::blocking::get(server.url("/ui")).unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().unwrap().contains("/ui/app.js"));
    let anonymous = reqwest::blocking::get(server.url("/v2/overview")).unwrap();
    assert_eq!(anonymous.status(), 401);
    let viewer = expect(
        server.post(
            "/v2/tokens",
            json!({"metadata": {"name": "viewer"}, "spec": {"projects": ["hello"], "role": "viewer", "expires": "1h"}}),
        ),
        201,
    )["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let driver = Driver::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let browser = driver.browser().await;
        browser.goto(&format!("{}/ui", server.base)).await.unwrap();

        // A wrong token is refused on the page, and nothing shows.
        sign_in(&browser, "not-a-token").await;
        let refusal = until(
            &browser,
            "the refusal",
            "return document.getElementById('login-error').textContent;",
            |text| text.as_str().is_some_and(|t| t.contains("refused")),
        )
        .await;
        assert!(refusal.as_str().unwrap().contains("token"), "{refusal}");

        // A project's viewer token is refused too: the page reads the fleet.
        sign_in(&browser, &viewer).await;
        until(
            &browser,
            "the viewer's refusal",
            "return document.getElementById('login-error').textContent;",
            |text| text.as_str().is_some_and(|t| t.contains("admin token")),
        )
        .await;

        // The right one: a fresh server's useful empty state.
        sign_in(&browser, &server.token).await;
        browser
            .wait()
            .for_element(Locator::Css("#empty-deployments pre"))
            .await
            .unwrap();
        let hint = browser
            .find(Locator::Css("#empty-deployments pre"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(hint.contains("wasmco apply -f examples/hello"), "{hint}");

        // Deployed from the CLI while the page is open: the grid appears and
        // turns Ready without a reload, on the two edge clusters only.
        apply_hello(&server);
        let cells = until(&browser, "hello Ready on both edge clusters", CELLS, |cells| {
            cells.as_array().is_some_and(|cells| {
                cells.len() == 2 && cells.iter().all(|c| c["state"] == "Ready")
            })
        })
        .await;
        let mut placed: Vec<&str> = cells
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cluster"].as_str().unwrap())
            .collect();
        placed.sort_unstable();
        assert_eq!(placed, ["dev+dev-1", "dev+dev-2"]);
        let state = browser
            .find(Locator::Css("[data-role=dig-state]"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(state, "Instantiated");
        screenshot(&browser, "deployments-ready.png").await;

        // A cell opens its resources.
        click(&browser, Locator::Css("td.cell[data-cluster='dev+dev-1']")).await;
        let resources = until(
            &browser,
            "the cell's resources",
            "const t = document.getElementById('detail-resources'); return t ? t.innerText : '';",
            |text| text.as_str().is_some_and(|t| t.contains("Deployment/hello")),
        )
        .await;
        let resources = resources.as_str().unwrap();
        assert!(resources.contains("Service/hello"), "{resources}");
        assert!(resources.contains("Applied"), "{resources}");
        screenshot(&browser, "cell-resources.png").await;
        click(&browser, Locator::Id("detail-close")).await;

        // Clusters: labels, version and placements; then dev-1 stops
        // answering and is shown Unreachable.
        open_tab(&browser, "clusters").await;
        let row = until(
            &browser,
            "dev-1 reachable with its version",
            "const r = document.querySelector(\"tr[data-cluster='dev+dev-1']\"); \
             return r ? {state: r.dataset.state, text: r.innerText} : null;",
            |row| row["state"] == "Reachable",
        )
        .await;
        let text = row["text"].as_str().unwrap();
        assert!(text.contains("edge"), "{text}");
        assert!(text.contains("hello/hello-app/v1/hello"), "{text}");
        // A cluster deployment whose machines nobody answers on: its row
        // turns Failed, naming the machine.
        // Blocking calls, off the browser's runtime.
        let nobody = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let provider = doc("eggo", json!({}));
                    expect(server.post("/v2/cluster-providers", provider), 201);
                    crate::cluster_deploy::deploy_to_nobody(&server, data.path())
                })
                .join()
                .unwrap()
        });
        let deployment = until(
            &browser,
            "the failed cluster deployment",
            &format!(
                "const r = document.querySelector(\"tr[data-deployment='eggo+{nobody}']\"); \
                 return r ? {{state: r.dataset.state, text: r.innerText}} : null;"
            ),
            |row| row["state"] == "Failed",
        )
        .await;
        let text = deployment["text"].as_str().unwrap();
        assert!(text.contains("infrastructure"), "{text}");
        assert!(text.contains("m1"), "{text}");
        screenshot(&browser, "cluster-deployment-failed.png").await;
        drop(clusters.remove(0));
        until(
            &browser,
            "dev-1 unreachable",
            "const r = document.querySelector(\"tr[data-cluster='dev+dev-1']\"); return r && r.dataset.state;",
            |state| state == "Unreachable",
        )
        .await;
        screenshot(&browser, "clusters-unreachable.png").await;

        // Controllers: the host's generic placement ran once for hello.
        open_tab(&browser, "controllers").await;
        let calls = until(
            &browser,
            "generic placement's calls",
            "const r = document.querySelector(\"tr[data-controller='generic-placement']\"); \
             return r ? r.cells[4].innerText : '';",
            |calls| calls.as_str().is_some_and(|c| !c.is_empty()),
        )
        .await;
        assert_eq!(calls, "1");

        // Signing out forgets the token.
        click(&browser, Locator::Id("sign-out")).await;
        let kept = browser
            .execute("return sessionStorage.getItem('wasmco.token');", vec![])
            .await
            .unwrap();
        assert_eq!(kept, Value::Null);
        browser.close().await.unwrap();
    });
}
