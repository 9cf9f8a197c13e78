//! Guests that misbehave: each failure is a value naming the controller, and
//! the next ordinary call works.

use std::time::{Duration, Instant};

use serde_json::json;
use wasmco_orchestrator::draft::{AppDraft, DraftContext};
use wasmco_orchestrator::{Step, run_controllers};
use wasmco_runtime::contract::PlacementRequest;
use wasmco_runtime::{CallFailure, Controller, ControllerKind, LimitOverrides, RegistrationError};

use crate::support::{cluster, guest, load, load_with, runtime};

fn request(action: &str) -> PlacementRequest {
    draft().placement_request(json!({"do": action}).to_string())
}

fn draft() -> DraftContext {
    DraftContext::new(
        vec![
            AppDraft::new("web", Vec::new()),
            AppDraft::new("db", Vec::new()),
        ],
        vec![cluster("p", "c1", &[], &[]), cluster("p", "c2", &[], &[])],
    )
}

fn hostile(limits: LimitOverrides) -> Controller {
    load_with(
        "hostile",
        ControllerKind::Placement,
        "guest_hostile.wasm",
        &limits,
    )
}

fn fails_with(controller: &Controller, action: &str) -> CallFailure {
    let err = controller.place(&request(action)).unwrap_err();
    assert_eq!(err.controller, "hostile");
    assert!(err.to_string().starts_with("controller hostile: "), "{err}");
    err.failure
}

fn still_works(controller: &Controller) {
    let out = controller
        .place(&request("ok"))
        .expect("an ordinary call after a failure");
    assert_eq!(out.value.len(), 1);
}

#[test]
fn an_endless_loop_stops_at_the_deadline() {
    let controller = hostile(LimitOverrides {
        deadline_ms: Some(300),
        ..Default::default()
    });
    let started = Instant::now();
    let failure = fails_with(&controller, "loop");
    let took = started.elapsed();
    assert_eq!(failure, CallFailure::DeadlineExceeded { deadline_ms: 300 });
    // Deadline plus one 10 ms tick, with room for a busy CI machine's scheduler.
    assert!(
        took >= Duration::from_millis(300),
        "stopped early: {took:?}"
    );
    assert!(
        took < Duration::from_millis(300 + 10 + 150),
        "stopped late: {took:?}"
    );
    still_works(&controller);
}

#[test]
fn growing_memory_stops_at_the_cap() {
    let cap = 16 << 20;
    let controller = hostile(LimitOverrides {
        memory_bytes: Some(cap),
        ..Default::default()
    });
    match fails_with(&controller, "grow") {
        CallFailure::MemoryLimit { limit, requested } => {
            assert_eq!(limit, cap);
            assert!(requested > cap);
        }
        other => panic!("expected a memory limit failure, got {other:?}"),
    }
    still_works(&controller);
}

#[test]
fn a_panic_fails_with_the_panic_message() {
    let controller = hostile(LimitOverrides::default());
    match fails_with(&controller, "panic") {
        CallFailure::Trap { message } => assert_eq!(message, "hostile guest gave up: 2"),
        other => panic!("expected a trap, got {other:?}"),
    }
    still_works(&controller);
}

#[test]
fn the_controllers_own_error_is_passed_on() {
    let controller = hostile(LimitOverrides::default());
    assert_eq!(
        fails_with(&controller, "error"),
        CallFailure::Refused {
            message: "I refuse".into()
        }
    );
    still_works(&controller);
}

#[test]
fn output_is_captured_and_bounded() {
    let controller = hostile(LimitOverrides {
        log_bytes: Some(4096),
        ..Default::default()
    });
    let out = controller.place(&request("print")).unwrap();
    assert_eq!(out.log.text.len(), 4096);
    assert!(
        out.log
            .text
            .starts_with("line 0 of a very chatty controller\n")
    );
    assert!(
        out.log.dropped_bytes > 1_000_000,
        "{}",
        out.log.dropped_bytes
    );
}

#[test]
fn edits_outside_the_context_are_refused_and_nothing_is_applied() {
    let controller = hostile(LimitOverrides::default());
    for action in ["bad-app", "bad-cluster", "half-bad"] {
        let mut context = draft();
        let err = run_controllers(
            &mut context,
            &[Step {
                controller: &controller,
                intent: json!({"do": action}).to_string(),
                nodes: None,
            }],
        )
        .unwrap_err();
        assert!(
            matches!(err.failure, CallFailure::InvalidEdit { .. }),
            "{action}: {err}"
        );
        assert!(
            context.apps().iter().all(|a| a.placement.is_empty()),
            "{action} left edits behind"
        );
    }
    // Counted as such in /metrics (this test alone has hostile's edits refused).
    let mut registry = prometheus_client::registry::Registry::default();
    crate::support::runtime().metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("wasmco_controller_invalid_edits_total{controller=\"hostile\"} 3"),
        "{text}"
    );
    let mut context = draft();
    run_controllers(
        &mut context,
        &[Step {
            controller: &controller,
            intent: "{}".into(),
            nodes: None,
        }],
    )
    .unwrap();
    assert_eq!(context.apps()[0].clusters(), vec![0]);
}

fn refused(kind: ControllerKind, wasm: &[u8]) -> RegistrationError {
    runtime()
        .load("refused", kind, wasm, &LimitOverrides::default())
        .expect_err("registration must fail")
}

/// What `controller` answers when its intent is `intent`: the message of
/// the error it returns.
fn refusal_of(controller: &Controller, intent: &str) -> String {
    let request = draft().placement_request(intent.to_owned());
    match controller.place(&request) {
        Err(error) => match error.failure {
            CallFailure::Refused { message } => message,
            other => panic!("expected the controller's own error, got {other}"),
        },
        Ok(output) => panic!("expected an error, got {:?}", output.value),
    }
}

#[test]
fn a_controller_has_no_file_to_read() {
    // It imports wasi:filesystem, as Python's and JavaScript's runtimes
    // do: registered, with no directory preopened behind it.
    let controller = load("reads", ControllerKind::Placement, "guest_fs_import.wasm");
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "the host's secret").unwrap();
    for path in [secret.path().to_str().unwrap(), "/etc/passwd", "."] {
        let message = refusal_of(&controller, path);
        assert!(
            !message.contains("secret") && !message.contains("root:"),
            "{message}"
        );
    }
}

#[test]
fn a_controller_cannot_open_a_socket() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let controller = load(
        "phones",
        ControllerKind::Placement,
        "guest_socket_import.wasm",
    );
    let message = refusal_of(&controller, &listener.local_addr().unwrap().to_string());
    assert!(!message.is_empty());
    assert!(
        listener.accept().is_err(),
        "the controller reached a socket on the host"
    );
    // Nor resolve a name.
    refusal_of(&controller, "localhost:80");
}

#[test]
fn the_wrong_world_and_non_components_are_refused() {
    let err = refused(ControllerKind::Placement, &guest("gac.wasm"));
    assert!(
        err.to_string().contains("must export wasmco:controller/placement@0.2.0 or wasmco:controller/placement@0.1.0, but it exports wasmco:controller/action@0.2.0"),
        "{err}"
    );
    let core_module = b"\0asm\x01\0\0\0";
    assert!(matches!(
        refused(ControllerKind::Action, core_module),
        RegistrationError::CoreModule
    ));
    assert!(matches!(
        refused(ControllerKind::Action, b"hello"),
        RegistrationError::NotWasm
    ));
    let mut truncated = guest("gac.wasm");
    truncated.truncate(truncated.len() / 2);
    assert!(matches!(
        refused(ControllerKind::Action, &truncated),
        RegistrationError::Compile(_)
    ));
}

#[test]
fn limits_may_only_tighten() {
    let err = runtime()
        .load(
            "greedy",
            ControllerKind::Placement,
            &guest("generic_placement.wasm"),
            &LimitOverrides {
                memory_bytes: Some(1 << 40),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().starts_with("limits.memoryBytes: "), "{err}");
    let ok = load(
        "generic",
        ControllerKind::Placement,
        "generic_placement.wasm",
    );
    assert_eq!(ok.limits(), runtime().default_limits());
}
