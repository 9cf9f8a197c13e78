//! Gate controllers as users write them: a new gate in each language builds
//! and answers its fixture alike, and the rollout example (a Rust gate and
//! a Python one, built by the CLI from their directories) holds checkout's
//! second group until both proceed.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::{Dev, repo, wasmco, wasmco_ok as ok};
use crate::support::wait::wait_until;

/// `wasmco controller test` of `project` (a project, built first, or a
/// component) against `fixture`: the report, or what the CLI said on
/// stderr.
fn ask(project: &str, fixture: &Value, dir: &std::path::Path) -> Result<Value, String> {
    let path = dir.join("asked.json");
    std::fs::write(&path, fixture.to_string()).unwrap();
    let cache = dir.join("cache");
    let asked = wasmco(&[
        "controller",
        "test",
        project,
        "--input",
        path.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&asked.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    if asked.status.success() {
        Ok(serde_json::from_slice(&asked.stdout).unwrap())
    } else {
        Err(stderr)
    }
}

#[test]
fn a_new_gate_answers_alike_in_rust_python_and_javascript() {
    let dir = tempfile::tempdir().unwrap();
    for lang in ["rust", "python", "js"] {
        let name = format!("soak-{lang}");
        let project = dir.path().join(&name);
        let project = project.to_str().unwrap();
        ok(&[
            "controller",
            "new",
            &name,
            "--type",
            "gate",
            "--lang",
            lang,
            "--dir",
            project,
        ]);
        // Built once; each question is then asked of the component.
        let built = ok(&["controller", "build", project]);
        let project = built.trim();
        let readme = std::fs::read_to_string(dir.path().join(&name).join("README.md")).unwrap();
        assert!(readme.contains("rollout-intents"), "{lang}: {readme}");
        let fixture: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(&name).join("fixture.json")).unwrap(),
        )
        .unwrap();
        let verdict = |change: &dyn Fn(&mut Value)| {
            let mut asked = fixture.clone();
            change(&mut asked);
            let report = ask(project, &asked, dir.path()).unwrap_or_else(|e| panic!("{lang}: {e}"));
            assert_eq!(report["controller"], "gate", "{lang}");
            report["verdict"].clone()
        };
        // Group 2 of 3, Ready for 10 s of a 30 s soak.
        assert_eq!(
            verdict(&|_| {}),
            json!({"wait": {"reason": "group 2 Ready for 10 s of 30 s", "retryAfterMs": 20000}}),
            "{lang}"
        );
        assert_eq!(
            verdict(&|f| f["readyMs"] = json!(30000)),
            json!("proceed"),
            "{lang}"
        );
        assert_eq!(
            verdict(&|f| f["unreachable"] = json!(["dev-1"])),
            json!({"wait": {"reason": "dev/dev-1 is unreachable", "retryAfterMs": 5000}}),
            "{lang}"
        );
        assert_eq!(
            verdict(&|f| f["status"][1]["failed"] = json!(1)),
            json!({"abort": "web failed on dev/dev-2 (1 of 2 resources)"}),
            "{lang}"
        );
        let mut refused = fixture.clone();
        refused["intent"] = json!({});
        let error = ask(project, &refused, dir.path()).expect_err(lang);
        assert!(error.contains("soakSeconds"), "{lang}: {error}");
        // A fixture naming a cluster no group released is refused by field.
        refused = fixture.clone();
        refused["status"][0]["cluster"] = json!("dev-3");
        let error = ask(project, &refused, dir.path()).expect_err(lang);
        assert!(
            error.contains("status: `dev-3` is in no released group"),
            "{lang}: {error}"
        );
    }
}

#[test]
fn the_rollout_examples_gates_hold_the_west_until_both_proceed() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo().join("examples/rollout");
    let soak = example.join("soak");
    // The Rust gate is the template, but for the repository's SDK and contract.
    let fresh = dir.path().join("soak");
    ok(&[
        "controller",
        "new",
        "soak",
        "--type",
        "gate",
        "--dir",
        fresh.to_str().unwrap(),
    ]);
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "fixture.json",
        ".cargo/config.toml",
    ] {
        let made = std::fs::read_to_string(fresh.join(file))
            .unwrap()
            .replace(
                r#"wasmco-guest = { path = "sdk" }"#,
                r#"wasmco-guest = { path = "../../../sdk" }"#,
            )
            .replace(r#"path: "wit" }"#, r#"path: "../../../wit" }"#);
        assert_eq!(
            made,
            std::fs::read_to_string(soak.join(file)).unwrap(),
            "examples/rollout/soak/{file} is not the gate template's"
        );
    }
    let fixture = |project: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(project.join("fixture.json")).unwrap()).unwrap()
    };
    let report = ask(soak.to_str().unwrap(), &fixture(&soak), dir.path()).unwrap();
    assert_eq!(report["verdict"]["wait"]["retryAfterMs"], 20000);
    let budget = example.join("error-budget");
    let report = ask(budget.to_str().unwrap(), &fixture(&budget), dir.path()).unwrap();
    assert_eq!(
        report["verdict"],
        json!({"abort": "1 of 3 app copies not Ready (33% > 20%): checkout on dev/dev-1"})
    );

    let dev = Dev::start();
    dev.ok(&["apply", "-f", "examples/rollout", "-s"]);
    let status = || dev.ok(&["rollout", "status", "checkout"]);
    // dev-1 (east) goes first; the canary's hold, then the soak, keep the
    // west back, each saying so.
    let mut seen = Vec::new();
    wait_until("the rollout to finish", Duration::from_secs(90), || {
        let now = status();
        for reason in [
            "gate error-budget waits: the canary runs 2 s before the next group",
            "gate soak waits: group 1 Ready for",
        ] {
            if now.contains(reason) && !seen.contains(&reason) {
                assert!(now.contains("1 of 2 groups released"), "{now}");
                assert!(dev.names(2, "apis/apps/v1/deployments").is_empty(), "{now}");
                assert!(dev.names(3, "apis/apps/v1/deployments").is_empty(), "{now}");
                seen.push(reason);
            }
        }
        now.contains("Done, 2 of 2 groups released")
    });
    assert_eq!(seen.len(), 2, "each gate held the west once: {seen:?}");
    dev.ok(&["status", "checkout", "--timeout", "60s"]);
    for n in [1, 2, 3] {
        assert_eq!(dev.names(n, "apis/apps/v1/deployments"), ["checkout"]);
    }
    let list = dev.ok(&["controller", "list"]);
    assert!(
        list.contains("soak") && list.contains("error-budget"),
        "{list}"
    );
    dev.ok(&["delete", "-f", "examples/rollout"]);
    dev.assert_clusters_empty();
}
