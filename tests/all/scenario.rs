//! `wasmco run` as a user runs it: the built binary on the shipped example.

use std::process::Command;

fn wasmco(args: &[&str]) -> std::process::Output {
    let cache = std::env::temp_dir().join(format!("wasmco-cli-cache-{}", std::process::id()));
    Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(args)
        .env("WASMCO_CACHE_DIR", cache)
        .output()
        .expect("wasmco runs")
}

#[test]
fn the_example_scenario_places_filters_and_customises() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/scenario/edge-web.yaml"
    );
    let out = wasmco(&["run", example]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Capacity placement dropped edge-west-1 (2 cores) and core-2 (no GPU).
    let placed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("# app ")).collect();
    assert_eq!(
        placed,
        [
            "# app web on cluster edge/edge-east-1",
            "# app web on cluster edge/edge-west-2",
            "# app inference on cluster core/core-1",
        ]
    );
    assert_eq!(stdout.matches("replicas: 3").count(), 2, "{stdout}");
    assert_eq!(stdout.matches("zone: west").count(), 1, "{stdout}");
}

#[test]
fn a_broken_scenario_is_a_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(
        &path,
        "clusters: []\napps: [{name: a, manifests: [{kind: X}]}]\ncontrollers: []\n",
    )
    .unwrap();
    let out = wasmco(&["run", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("app a, manifest 0: apiVersion is missing"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
