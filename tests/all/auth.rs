//! The host's own API: bearer-token auth and `serve --tls` with the host CA.

use std::process::{Command, Stdio};

use reqwest::blocking::Client;
use serde_json::Value;

use crate::support::server::{Server, authorised};

#[test]
fn every_route_but_healthz_needs_the_admin_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("admin.token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let anonymous = Client::new();
    assert_eq!(
        anonymous
            .get(server.url("/healthz"))
            .send()
            .unwrap()
            .status(),
        200
    );
    for path in ["/v2/projects", "/v2/openapi.json", "/v2/no-such-route"] {
        let response = anonymous.get(server.url(path)).send().unwrap();
        assert_eq!(response.status(), 401, "{path}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: Value = response.json().unwrap();
        assert!(
            body["message"].as_str().unwrap().contains("Bearer"),
            "{body}"
        );
    }
    let wrong = authorised("not-the-token")
        .post(server.url("/v2/projects"))
        .json(&serde_json::json!({"metadata": {"name": "p"}}))
        .send()
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.text().unwrap().contains("not valid"));
    // Nothing the refused requests carried was stored.
    let projects: Value = server.get("/v2/projects").json().unwrap();
    assert_eq!(projects, serde_json::json!([]));
}

#[test]
fn https_verifies_against_the_host_ca_and_the_cli_follows() {
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wasmco"))
            .args(["serve", "--tls", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let base = crate::support::server::api_address(&mut child);
        (child, base)
    };
    let (mut child, base) = start();
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let ca_path = dir.path().join("tls/ca.crt");
    let ca_pem = std::fs::read(&ca_path).unwrap();
    let token = std::fs::read_to_string(dir.path().join("admin.token")).unwrap();
    let trusting = Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca_pem).unwrap())
        .build()
        .unwrap();
    let response = trusting
        .get(format!("{base}/v2/projects"))
        .bearer_auth(token.trim())
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    // Without the host CA the handshake fails: the certificate is the host's own.
    let error = Client::new()
        .get(format!("{base}/healthz"))
        .send()
        .unwrap_err();
    assert!(error.is_connect() || error.is_request(), "{error:?}");
    // Plain HTTP gets no answer from the TLS port.
    assert!(
        Client::new()
            .get(base.replace("https://", "http://") + "/healthz")
            .send()
            .is_err()
    );

    // The CLI over HTTPS, trusting the host CA.
    let output = Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(["--server", &base, "--token", token.trim(), "--ca-file"])
        .arg(&ca_path)
        .args(["get", "projects", "-o", "json"])
        .env("WASMCO_CONFIG", "/nonexistent")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "[]");

    // A restart keeps the CA made on first start.
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, base) = start();
    assert_eq!(std::fs::read(&ca_path).unwrap(), ca_pem);
    let response = trusting.get(format!("{base}/healthz")).send().unwrap();
    assert_eq!(response.status(), 200);
    child.kill().unwrap();
    child.wait().unwrap();
}
