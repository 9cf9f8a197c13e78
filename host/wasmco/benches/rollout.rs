//! A progressive rollout at scale: one ConfigMap on 1,000 virtual
//! clusters (in this process), once at once and once in 10 groups with a
//! gate controller (the test guest, proceeding) between each. Measured:
//! both times to converge, and the rollout driver's own time, from the
//! step that finds a group Ready to the next group's release stored (the
//! gate's sandboxed call included), summed over the groups: the target is
//! 1 s in all (`wasmco_rollout_release_duration`).
//!
//! `cargo bench -p wasmco --bench rollout` (`WASMCO_ROLLOUT_CLUSTERS`
//! changes the fleet's size).

use std::time::{Duration, Instant};

use serde_json::json;

mod support;

use support::{approved_dig, config_maps, create, wait_applied};
use wasmco_core::Kind;
use wasmco_core::wire::RolloutPhase;
use wasmco_orchestrator::Actor;

const GROUPS: u64 = 10;
const TARGET_SECONDS: f64 = 1.0;

fn main() {
    let clusters: usize = std::env::var("WASMCO_ROLLOUT_CLUSTERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let fleet = support::EdgeFleet::start(clusters);
    let state = &fleet.state;
    let gate = std::path::Path::new(wasmco_test_guests::DIR).join("guest_gate.wasm");
    create(
        &state.db,
        Kind::Controller,
        &["pass"],
        json!({"type": "gate", "priority": 10}),
        Some(std::fs::read(gate).expect("the test gate")),
    );
    println!(
        "A rollout: one ConfigMap on {clusters} virtual clusters (this process), at once, then in \
         {GROUPS} groups with a gate between each; load average before: {}",
        support::load_average()
    );

    let plain = approved_dig(
        &state.orchestrator,
        &state.db,
        "plain",
        "edge",
        cfg("plain"),
    );
    let started = Instant::now();
    state
        .orchestrator
        .instantiate(&plain, Actor::Admin)
        .expect("instantiate");
    wait_applied(&state.orchestrator, &plain, clusters);
    let at_once = started.elapsed();

    let waves = approved_dig(
        &state.orchestrator,
        &state.db,
        "waves",
        "edge",
        cfg("waves"),
    );
    let dig_path = |rest: &[&str]| -> Vec<String> {
        ["waves", "ca", "v1", "d"]
            .iter()
            .chain(rest)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let put = |kind: Kind, rest: &[&str], spec: serde_json::Value| {
        let path = dig_path(rest);
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        create(&state.db, kind, &path, spec, None);
    };
    put(
        Kind::RolloutIntent,
        &["waves"],
        json!({"groups": {"count": GROUPS},
               "gates": [{"controller": "pass", "intent": {"do": "proceed"}}]}),
    );
    put(
        Kind::DigIntent,
        &["r"],
        json!({"intent": {"rolloutIntent": "waves"}}),
    );
    let before = released_seconds(state);
    let started = Instant::now();
    state
        .orchestrator
        .instantiate(&waves, Actor::Admin)
        .expect("instantiate");
    loop {
        let (rollout, _) = state.orchestrator.rollout(&waves).expect("rollout");
        let rollout = rollout.expect("a rollout");
        match rollout.phase {
            RolloutPhase::Done => break,
            RolloutPhase::Progressing => {}
            other => panic!("the rollout is {other}: {:?}", rollout.reason),
        }
        assert!(started.elapsed() < Duration::from_secs(600), "no end");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_applied(&state.orchestrator, &waves, clusters);
    let in_groups = started.elapsed();
    let (sum, count) = released_seconds(state);
    let own = sum - before.0;
    println!(
        "  at once: {:.2} s; in {GROUPS} groups with a gate: {:.2} s",
        at_once.as_secs_f64(),
        in_groups.as_secs_f64()
    );
    println!(
        "  the driver's own time over {} releases: {:.3} s (target {TARGET_SECONDS} s: {}); {:.1} ms a group",
        count - before.1,
        own,
        if own <= TARGET_SECONDS {
            "met"
        } else {
            "NOT met"
        },
        own * 1000.0 / (count - before.1).max(1) as f64
    );
}

/// One ConfigMap, named after `project`.
fn cfg(project: &str) -> String {
    config_maps(project, 1, &json!({"rollout": project}))
}

/// The sum and count of `wasmco_rollout_release_duration` so far.
fn released_seconds(state: &wasmco_api::AppState) -> (f64, u64) {
    let mut registry = prometheus_client::registry::Registry::default();
    state.orchestrator.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("metrics");
    let value = |suffix: &str| {
        text.lines()
            .find_map(|line| {
                line.strip_prefix("wasmco_rollout_release_duration_seconds_")?
                    .strip_prefix(suffix)?
                    .strip_prefix(' ')
                    .map(str::trim)
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    };
    (
        value("sum").parse().unwrap_or(0.0),
        value("count").parse().unwrap_or(0),
    )
}
