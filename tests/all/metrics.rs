//! `/metrics` after a real deployment, read with a Prometheus parser: the
//! API's requests by route template, the controllers' calls, rsync's
//! objects and reconciles, the store's size; behind the token on the API's
//! address, open on `--metrics-listen`'s.

use std::time::Duration;

use crate::deploy::{DIG, action, set_up_with};
use crate::kube_apiserver::free_port;
use crate::support::server::{Server, Virtual, expect};
use crate::support::wait::{eventually, wait_until};

/// One sample of an exposition.
#[derive(Debug, serde::Deserialize)]
struct Sample {
    name: String,
    labels: std::collections::BTreeMap<String, String>,
    value: f64,
}

/// The samples of `text`, read by the Prometheus project's own parser
/// (its Python client, which refuses a malformed document).
fn parse(text: &str) -> Vec<Sample> {
    use std::io::Write;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/metrics/parse.sh");
    let mut child = std::process::Command::new("bash")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the parser starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the exposition does not parse: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found = samples.iter().find(|sample| {
        sample.name == name
            && labels
                .iter()
                .all(|(label, value)| sample.labels.get(*label).map(String::as_str) == Some(*value))
    });
    match found {
        Some(sample) => sample.value,
        None => panic!("no {name} {labels:?} among {samples:#?}"),
    }
}

/// The sum of the samples `name` whose labels include `labels`; 0 when
/// there is none yet (a labelled series appears at its first count).
fn sum(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|sample| {
            sample.name == name
                && labels.iter().all(|(label, value)| {
                    sample.labels.get(*label).map(String::as_str) == Some(*value)
                })
        })
        .map(|sample| sample.value)
        .sum()
}

/// Three virtual clusters, and the server `start` starts with the shop
/// DIG set up on them, approved and instantiated.
fn shop_on_three_clusters(start: impl FnOnce() -> Server) -> ([Virtual; 3], Server) {
    let clusters = [
        Virtual::start("c1"),
        Virtual::start("c2"),
        Virtual::start("c3"),
    ];
    let server = start();
    set_up_with(&server, clusters.each_ref().map(|c| c.kubeconfig.clone()));
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);
    (clusters, server)
}

#[test]
fn a_deployment_shows_in_the_metrics_of_every_layer() {
    let data = tempfile::tempdir().unwrap();
    let metrics_address = format!("127.0.0.1:{}", free_port());
    let (clusters, server) = shop_on_three_clusters(|| {
        Server::start_with(
            data.path(),
            &[
                "--metrics-listen",
                &metrics_address,
                "--probe-interval",
                "1s",
            ],
        )
    });
    wait_until(
        "the deployment to get ready",
        Duration::from_secs(30),
        || expect(server.get(&format!("{DIG}/status?status=ready")), 200)["readyStatus"] == "Ready",
    );
    // Ready is recorded within the reconcile, which is counted once it
    // ends: the scrape below is taken after that.
    wait_until(
        "the reconcile that made it ready to be counted",
        Duration::from_secs(30),
        || {
            let scrape = parse(&server.get("/metrics").text().unwrap());
            sum(
                &scrape,
                "wasmco_rsync_reconciles_total",
                &[("outcome", "settled")],
            ) >= 1.0
        },
    );

    // Behind the token on the API's address.
    let anonymous = reqwest::blocking::get(server.url("/metrics")).unwrap();
    assert_eq!(anonymous.status(), 401);
    let answer = server.get("/metrics");
    assert_eq!(answer.status(), 200);
    assert!(
        answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
    );
    let scrape = parse(&answer.text().unwrap());

    // Requests by route template, never by raw path.
    assert_eq!(
        value(
            &scrape,
            "wasmco_http_requests_total",
            &[
                ("route", "/v2/projects"),
                ("method", "POST"),
                ("status", "201")
            ]
        ),
        1.0
    );
    let dig_route = "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/{deploymentIntentGroup}";
    assert_eq!(
        value(
            &scrape,
            "wasmco_http_requests_total",
            &[
                ("route", &format!("{dig_route}/instantiate")),
                ("status", "202")
            ]
        ),
        1.0
    );
    assert!(
        !scrape
            .iter()
            .any(|s| s.labels.values().any(|v| v.contains("/shop/"))),
        "an object's name in a label"
    );
    assert!(
        value(
            &scrape,
            "wasmco_http_request_duration_seconds_count",
            &[("route", "/v2/projects"), ("method", "POST")]
        ) >= 1.0
    );

    // One generic placement and one gac call, both fine.
    for controller in ["generic-placement", "gac"] {
        assert_eq!(
            value(
                &scrape,
                "wasmco_controller_calls_total",
                &[("controller", controller), ("outcome", "ok")]
            ),
            1.0,
            "{controller}"
        );
        assert_eq!(
            value(
                &scrape,
                "wasmco_controller_call_duration_seconds_count",
                &[("controller", controller)]
            ),
            1.0
        );
    }

    // gac was compiled (or found in the cache) and instantiated once at upload.
    let loaded = sum(&scrape, "wasmco_controller_compile_cache_total", &[]);
    assert!(loaded >= 2.0, "the built-in generic placement and gac");
    assert_eq!(
        value(
            &scrape,
            "wasmco_controller_instantiation_duration_seconds_count",
            &[("controller", "gac")]
        ),
        1.0
    );

    // The instantiate's stages, each once.
    for stage in ["inputs", "placement", "actions", "store"] {
        assert_eq!(
            value(
                &scrape,
                "wasmco_deploy_stage_duration_seconds_count",
                &[("action", "instantiate"), ("stage", stage)]
            ),
            1.0,
            "{stage}"
        );
    }

    // rsync applied the seven objects, once each.
    assert_eq!(
        value(
            &scrape,
            "wasmco_rsync_objects_total",
            &[("outcome", "applied")]
        ),
        7.0
    );
    assert!(
        value(
            &scrape,
            "wasmco_rsync_reconciles_total",
            &[("outcome", "settled")]
        ) >= 1.0
    );
    assert!(value(&scrape, "wasmco_store_size_bytes", &[]) > 0.0);
    // Every acknowledged write was flushed, each timed.
    assert!(value(&scrape, "wasmco_store_flush_duration_seconds_count", &[]) >= 10.0);
    // Settled: no cluster job waits for a slot.
    assert_eq!(value(&scrape, "wasmco_rsync_queue_depth", &[]), 0.0);
    assert!(
        value(
            &scrape,
            "wasmco_rsync_apply_duration_seconds_count",
            &[("cluster", "edge+c1")]
        ) >= 2.0
    );
    assert_eq!(value(&scrape, "wasmco_rsync_drift_repairs_total", &[]), 0.0);

    // Someone deletes an object on a cluster: rsync puts it back, and says so.
    let web = "/apis/apps/v1/namespaces/default/deployments/web";
    assert_eq!(
        clusters[0].send("DELETE", web, "", None).status().as_u16(),
        200
    );
    wait_until("the drift to be repaired", Duration::from_secs(30), || {
        let scrape = parse(&server.get("/metrics").text().unwrap());
        value(&scrape, "wasmco_rsync_drift_repairs_total", &[]) >= 1.0
    });
    assert!(clusters[0].object(web).is_some());

    // Open on the metrics address, which serves nothing else.
    let open = reqwest::blocking::get(format!("http://{metrics_address}/metrics")).unwrap();
    assert_eq!(open.status(), 200);
    let scrape = parse(&open.text().unwrap());
    assert!(
        value(
            &scrape,
            "wasmco_controller_calls_total",
            &[("controller", "gac")]
        ) >= 1.0
    );
    let api = reqwest::blocking::get(format!("http://{metrics_address}/v2/projects")).unwrap();
    assert_eq!(api.status(), 404);

    // Terminated: the seven objects are deleted, and counted.
    expect(action(&server, DIG, "terminate"), 202);
    wait_until("the objects to be deleted", Duration::from_secs(30), || {
        let scrape = parse(&server.get("/metrics").text().unwrap());
        let deleted = sum(
            &scrape,
            "wasmco_rsync_objects_total",
            &[("outcome", "deleted")],
        );
        assert!(deleted <= 7.0, "{deleted} objects deleted");
        deleted == 7.0
    });

    // Clusters by reachability, as the probes see them: one goes away.
    let reachable = |count: f64, unreachable: f64| {
        let scrape = parse(&server.get("/metrics").text().unwrap());
        value(&scrape, "wasmco_clusters", &[("reachability", "Reachable")]) == count
            && value(
                &scrape,
                "wasmco_clusters",
                &[("reachability", "Unreachable")],
            ) == unreachable
    };
    wait_until(
        "the three clusters all reachable",
        Duration::from_secs(20),
        || reachable(3.0, 0.0),
    );
    let mut clusters = Vec::from(clusters);
    drop(clusters.pop());
    wait_until(
        "the stopped cluster unreachable",
        Duration::from_secs(30),
        || reachable(2.0, 1.0),
    );
}

#[test]
fn logs_can_be_one_json_object_per_line() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("server.log");
    let server = Server::start_logged(
        data.path(),
        &["--log-format", "json"],
        &[("RUST_LOG", "info")],
        &log,
    );
    expect(
        server.post(
            "/v2/projects",
            crate::support::server::doc("p", serde_json::json!({})),
        ),
        201,
    );
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}")))
        .collect();
    assert!(!lines.is_empty(), "the server logged nothing");
    assert!(
        lines
            .iter()
            .all(|line| line["level"].is_string() && line["fields"].is_object()),
        "{lines:#?}"
    );
}

#[test]
fn a_dig_action_and_its_reconciles_log_under_spans_naming_the_dig() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("server.log");
    let (_clusters, _server) = shop_on_three_clusters(|| {
        Server::start_logged(
            data.path(),
            &["--log-format", "json"],
            &[("RUST_LOG", "info")],
            &log,
        )
    });
    let key = "shop/store/v1/live";
    let lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    };
    let logged =
        |lines: &[serde_json::Value], message: &str, span: &str, field: &str, value: &str| {
            lines.iter().any(|line| {
                line["fields"]["message"] == message
                    && line["spans"].as_array().is_some_and(|spans| {
                        spans.iter().any(|s| s["name"] == span && s[field] == value)
                    })
            })
        };
    let lines = eventually("the action's logs", Duration::from_secs(30), || {
        let lines = lines();
        // The action, its controllers, and the reconcile of what it built.
        if logged(&lines, "context built and stored", "deploy", "dig", key)
            && logged(&lines, "controller ran", "controller", "controller", "gac")
            && logged(&lines, "reconcile ended", "reconcile", "target", key)
        {
            Ok(lines)
        } else {
            Err(format!("{lines:#?}"))
        }
    });
    let deploy = lines
        .iter()
        .find(|l| l["fields"]["message"] == "context built and stored")
        .unwrap();
    assert_eq!(deploy["span"]["revision"], 1, "{deploy}");
    assert_eq!(deploy["span"]["action"], "instantiate", "{deploy}");
    // Inside the request that asked for it, though it ran on a
    // blocking thread.
    let instantiate_route = "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/{deploymentIntentGroup}/instantiate";
    assert!(
        logged(
            &lines,
            "context built and stored",
            "request",
            "route",
            instantiate_route
        ),
        "{deploy}"
    );
}

#[cfg(not(feature = "otlp"))]
#[test]
fn an_otlp_endpoint_needs_a_build_with_the_exporter() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args([
            "--otlp-endpoint",
            "http://127.0.0.1:4318",
            "get",
            "clusters",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--features otlp"), "{stderr}");
}
