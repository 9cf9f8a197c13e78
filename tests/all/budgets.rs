//! A controller's edits cannot take the host down: JSON patches that
//! double a manifest or nest it without end, through the built-in gac and a
//! real `wasmco serve`, fail the instantiate with a clear error while other
//! requests are served.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::deploy::{DIG, action, add_placement, set_up_with};
use crate::support::server::{Server, doc, expect, fixture, peak_memory_kib, wasm};

/// The gac intent the DIG hands gac, replaced by `customizations`.
fn set_gac_intent(server: &Server, customizations: Value) {
    let path = format!("{DIG}/controller-intents/c3-replicas");
    expect(
        server.put(
            &path,
            json!({"metadata": {"name": "c3-replicas"}, "spec": {"customizations": customizations}}),
        ),
        200,
    );
}

fn json_patch(ops: Vec<Value>) -> Value {
    json!([{"app": "web", "target": {"kind": "Deployment", "name": "web"},
            "patchType": "json", "patch": ops}])
}

/// Instantiates in the background while GETs go on; answers the
/// instantiate's status and body and the slowest GET.
fn instantiate_while_getting(server: &Server) -> (u16, Value, Duration) {
    expect(action(server, DIG, "approve"), 202);
    let (client, url) = (
        server.client.clone(),
        server.url(&format!("{DIG}/instantiate")),
    );
    let call = std::thread::spawn(move || {
        let response = client.post(url).send().unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().unwrap_or(Value::Null))
    });
    let mut slowest = Duration::ZERO;
    while !call.is_finished() {
        let sent = Instant::now();
        expect(server.get("/v2/projects"), 200);
        slowest = slowest.max(sent.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, body) = call.join().unwrap();
    (status, body, slowest)
}

fn set_up(server: &Server) {
    let kubeconfig = fixture("kubeconfig.yaml");
    set_up_with(server, [kubeconfig.clone(), kubeconfig.clone(), kubeconfig]);
}

#[test]
fn a_json_patch_copy_bomb_fails_at_the_budget() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    // Each copy puts the whole spec beside itself: 40 of them would make
    // 2^40 copies of it.
    let mut ops = vec![json!({"op": "add", "path": "/spec/a", "value": {"pad": "x".repeat(1000)}})];
    for round in 0..40 {
        ops.push(json!({"op": "copy", "from": "/spec", "path": "/metadata/annotations"}));
        ops.push(json!({"op": "copy", "from": "/metadata/annotations", "path": format!("/spec/b{round}")}));
    }
    set_gac_intent(&server, json_patch(ops));
    let started = Instant::now();
    let (status, body, slowest) = instantiate_while_getting(&server);
    assert_eq!(status, 422, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("gac"), "{message}");
    assert!(
        message.contains("manifestBytes") || message.contains("outputBytes"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(slowest < Duration::from_secs(2), "a GET waited {slowest:?}");
    let peak = peak_memory_kib(server.pid());
    assert!(peak < 700 << 10, "the server peaked at {peak} KiB");
    // Nothing was applied, and the DIG can be fixed and instantiated.
    let state = expect(server.get(&format!("{DIG}/status")), 200);
    assert_eq!(state["deployedStatus"], "Approved", "{state}");
    set_gac_intent(
        &server,
        json_patch(vec![
            json!({"op": "add", "path": "/spec/replicas", "value": 3}),
        ]),
    );
    expect(action(&server, DIG, "instantiate"), 202);
}

#[test]
fn a_copy_into_its_own_subtree_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    set_gac_intent(
        &server,
        json_patch(vec![
            json!({"op": "copy", "from": "/spec", "path": "/spec/again"}),
        ]),
    );
    let (status, body, _) = instantiate_while_getting(&server);
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("own subtree"),
        "{body}"
    );
}

/// Copies that nest two values into each other in turn: the depth grows
/// like the Fibonacci numbers while the intent stays small (~200 KB for
/// 100,000 levels).
fn nesting_ops(depth: usize) -> Vec<Value> {
    let mut ops = vec![
        json!({"op": "add", "path": "/spec/a", "value": {}}),
        json!({"op": "add", "path": "/spec/b", "value": {}}),
    ];
    let (mut a, mut b) = (0usize, 0usize);
    let mut turn = 0;
    while a.max(b) < depth {
        if turn % 2 == 0 {
            ops.push(json!({"op": "copy", "from": "/spec/a", "path": format!("/spec/b{}", "/x".repeat(b + 1))}));
            b += 1 + a;
        } else {
            ops.push(json!({"op": "copy", "from": "/spec/b", "path": format!("/spec/a{}", "/x".repeat(a + 1))}));
            a += 1 + b;
        }
        turn += 1;
    }
    ops
}

#[test]
fn a_patch_nesting_a_manifest_100k_deep_is_a_4xx_not_a_crash() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    let ops = nesting_ops(100_000);
    assert!(json!(ops).to_string().len() < 1 << 20);
    set_gac_intent(&server, json_patch(ops));
    let (status, body, _) = instantiate_while_getting(&server);
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("deeper than 128"),
        "{body}"
    );
    // Still up.
    expect(server.get("/healthz"), 200);
}

/// Registers the hostile guest and a DIG `hostile` in the `shop` project
/// whose intents name it with `{"do": what}`.
fn hostile_dig(server: &Server, what: &str, deadline_ms: u64) -> String {
    let ca = "/v2/projects/shop/composite-apps/store/v1";
    expect(
        server.upload(
            "/v2/controllers",
            doc(
                "hostile",
                json!({"type": "placement", "priority": 5, "limits": {"deadlineMs": deadline_ms}}),
            ),
            Some(wasm("guest_hostile.wasm")),
        ),
        201,
    );
    let dig = format!("{ca}/deployment-intent-groups/hostile");
    expect(
        server.post(
            &format!("{ca}/deployment-intent-groups"),
            doc(
                "hostile",
                json!({"compositeProfile": "profile", "version": "r1"}),
            ),
        ),
        201,
    );
    add_placement(server, &dig);
    expect(
        server.post(
            &format!("{dig}/controller-intents"),
            doc("what", json!({"do": what})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{dig}/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "hostile": "what"}}),
            ),
        ),
        201,
    );
    expect(action(server, &dig, "approve"), 202);
    dig
}

#[test]
fn a_controllers_huge_messages_are_cut_before_they_reach_anyone() {
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("server.log");
    // wasmco's own logging at its most verbose (cranelift's would swamp it).
    let env = [("RUST_LOG", "info,wasmco=debug")];
    let server = Server::start_logged(data.path(), &[], &env, &log);
    set_up(&server);
    let dig = hostile_dig(&server, "huge-error", 2_000);
    let response = action(&server, &dig, "instantiate");
    let status = response.status();
    let text = response.text().unwrap();
    assert_eq!(status, 422, "{}", &text[..text.len().min(500)]);
    assert!(text.len() < 80 << 10, "a {} byte answer", text.len());
    assert!(
        text.contains("bytes cut"),
        "{}",
        &text[..text.len().min(200)]
    );
    for (what, words) in [
        ("huge-app", "is not part of this deployment"),
        ("repeat", ""),
    ] {
        let intent = format!("{dig}/controller-intents/what");
        expect(server.put(&intent, doc("what", json!({"do": what}))), 200);
        let started = Instant::now();
        let response = action(&server, &dig, "instantiate");
        let status = response.status().as_u16();
        let text = response.text().unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        assert!(
            text.len() < 80 << 10,
            "{what}: a {} byte answer",
            text.len()
        );
        if what == "repeat" {
            // A million mentions of one cluster place the app there once.
            assert_eq!(status, 202, "{text}");
            let context = expect(server.get(&format!("{dig}/context")), 200);
            let on_c1 = context["apps"][0]["clusters"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["cluster"] == "c1")
                .count();
            assert_eq!(on_c1, 1, "{context}");
        } else {
            assert_eq!(status, 422, "{what}: {text}");
            assert!(
                text.contains(words),
                "{what}: {}",
                &text[..text.len().min(300)]
            );
        }
    }
    drop(server);
    let log_size = std::fs::metadata(&log).unwrap().len();
    assert!(log_size < 1 << 20, "the server logged {log_size} bytes");
}

#[test]
fn a_slow_dig_does_not_hold_another_dig_s_actions() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    let slow = hostile_dig(&server, "loop", 1_500);
    let (client, url) = (
        server.client.clone(),
        server.url(&format!("{slow}/instantiate")),
    );
    let started = Instant::now();
    let call = std::thread::spawn(move || client.post(url).send().unwrap().status().as_u16());
    // A head start into its 1.5 s controller call, which nothing outside
    // the server shows while it runs.
    std::thread::sleep(Duration::from_millis(300));
    // Another DIG's approve is not held behind it.
    let approved = Instant::now();
    expect(action(&server, DIG, "approve"), 202);
    let waited = approved.elapsed();
    assert_eq!(call.join().unwrap(), 422);
    assert!(started.elapsed() >= Duration::from_millis(1400));
    assert!(
        waited < Duration::from_secs(1),
        "the approve waited {waited:?}"
    );
}

#[test]
fn a_refused_component_is_not_compiled_or_cached() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let cached = || {
        std::fs::read_dir(data.path().join("cache"))
            .map(|dir| dir.count())
            .unwrap_or(0)
    };
    let before = cached();
    for (component, kind, words) in [
        (
            crate::support::importing("wasi:http/outgoing-handler@0.2.0"),
            "placement",
            "wasi:http",
        ),
        (wasm("gac.wasm"), "placement", "must export"),
    ] {
        let body = expect(
            server.upload(
                "/v2/controllers",
                doc("refused", json!({"type": kind, "priority": 1})),
                Some(component),
            ),
            422,
        );
        assert!(body["message"].as_str().unwrap().contains(words), "{body}");
    }
    assert_eq!(cached(), before, "a refused component was cached");
    expect(
        server.upload(
            "/v2/controllers",
            doc("accepted", json!({"type": "action", "priority": 1})),
            Some(wasm("gac.wasm")),
        ),
        201,
    );
    assert_eq!(cached(), before + 1);
}

#[test]
fn a_compile_past_its_time_is_stopped_and_refused() {
    let data = tempfile::tempdir().unwrap();
    // A first start compiles the built-in controllers into the cache.
    drop(Server::start(data.path()));
    let server = Server::start_with(data.path(), &["--compile-timeout", "1ms"]);
    let cached = || {
        std::fs::read_dir(data.path().join("cache"))
            .unwrap()
            .count()
    };
    let before = cached();
    let started = Instant::now();
    let body = expect(
        server.upload(
            "/v2/controllers",
            doc("slow", json!({"type": "action", "priority": 1})),
            Some(wasm("gac.wasm")),
        ),
        422,
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("did not compile within"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(cached(), before, "a stopped compile left something behind");
    expect(server.get("/v2/controllers"), 200);
    // With time to compile, the same component is accepted.
    drop(server);
    let server = Server::start(data.path());
    expect(
        server.upload(
            "/v2/controllers",
            doc("slow", json!({"type": "action", "priority": 1})),
            Some(wasm("gac.wasm")),
        ),
        201,
    );
}

#[test]
fn the_host_sets_the_edit_limits_controllers_get() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--controller-limits", r#"{"maxEdits": 1}"#]);
    set_up(&server);
    expect(action(&server, DIG, "approve"), 202);
    let body = expect(action(&server, DIG, "instantiate"), 422);
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("maxEdits"), "{message}");
    let limits = expect(server.get("/v2/controllers/gac"), 200);
    assert_eq!(limits["status"]["limits"]["maxEdits"], 1, "{limits}");
}
