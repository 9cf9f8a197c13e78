//! Controllers in Python and JavaScript: a new project of each language and
//! kind builds with the language's own toolchain and passes its fixture as
//! the Rust template does; the polyglot example deploys through `wasmco
//! dev` with one controller of each; a missing toolchain is named.

use serde_json::{Value, json};

use crate::cli::{Dev, repo, toolchains, wasmco, wasmco_ok as ok};

/// `wasmco controller test` of `project` against its own fixture: the report.
fn test_against_fixture(project: &str, cache: &std::path::Path) -> Value {
    let fixture = format!("{project}/fixture.json");
    let report = ok(&[
        "controller",
        "test",
        project,
        "--input",
        &fixture,
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    serde_json::from_str(&report).unwrap()
}

#[test]
fn new_python_and_js_projects_build_and_answer_their_fixtures_as_rusts_do() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let expected = [
        (
            "placement",
            json!([{"unplace": {"app": "web", "clusters": ["dev/dev-2"]}}]),
        ),
        (
            "action",
            json!([{"patch": {"app": "web", "clusters": "all", "target": "Deployment/web",
                              "mergePatch": {"metadata": {"labels": {"team": "payments"}}}}}]),
        ),
    ];
    for lang in ["python", "js"] {
        for (kind, edits) in &expected {
            let name = format!("{kind}-{lang}");
            let project = dir.path().join(&name);
            let project = project.to_str().unwrap();
            ok(&[
                "controller",
                "new",
                &name,
                "--type",
                kind,
                "--lang",
                lang,
                "--dir",
                project,
            ]);
            let built = ok(&["controller", "build", project]);
            assert!(built.trim().ends_with(&format!("{name}.wasm")), "{built}");
            let report = test_against_fixture(project, &cache);
            assert_eq!(report["controller"], *kind, "{name}");
            assert_eq!(report["edits"], *edits, "{name}");
        }
    }
    // The intent the template refuses, with its message.
    let fixture = dir.path().join("bad.json");
    let mut bad: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("placement-python/fixture.json")).unwrap(),
    )
    .unwrap();
    bad["intent"] = json!({"avoidLabels": "maintenance"});
    std::fs::write(&fixture, bad.to_string()).unwrap();
    for lang in ["python", "js"] {
        let project = dir.path().join(format!("placement-{lang}"));
        let refused = wasmco(&[
            "controller",
            "test",
            project.to_str().unwrap(),
            "--input",
            fixture.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ]);
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("the intent needs avoidLabels"),
            "{lang}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_python_and_a_js_controller_deploy_the_polyglot_example() {
    // Each project builds from the repository's SDK and contract and
    // answers its fixture, before the server builds it again to upload.
    let cache = tempfile::tempdir().unwrap();
    for (project, kind, edits) in [
        (
            "examples/polyglot/label-rules",
            "placement",
            json!([{"unplace": {"app": "web", "clusters": ["dev/dev-1", "dev/dev-3"]}}]),
        ),
        (
            "examples/polyglot/stamp",
            "action",
            std::iter::once(json!({"patch": {"app": "web", "clusters": "all", "target": "Deployment/web",
                                          "mergePatch": {"metadata": {"labels": {"team": "payments"}}}}}))
                .chain((1..=3).map(|n| {
                    let cluster = format!("dev/dev-{n}");
                    json!({"add": {"app": "web", "clusters": [cluster],
                        "manifest": {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "web-owner", "labels": {"team": "payments"}},
                            "data": {"team": "payments", "cluster": cluster}}}})
                }))
                .collect::<Value>(),
        ),
    ] {
        let report = test_against_fixture(project, cache.path());
        assert_eq!(report["controller"], kind, "{project}");
        assert_eq!(report["edits"], edits, "{project}");
    }
    let dev = Dev::start();
    dev.ok(&["apply", "-f", "examples/polyglot", "-s"]);
    dev.ok(&["status", "checkout", "--timeout", "60s"]);
    // label-rules (Python) kept checkout off dev-1 (east); stamp (JS)
    // labelled it and added its ConfigMap on dev-2, where it runs.
    assert!(dev.names(1, "apis/apps/v1/deployments").is_empty());
    assert!(dev.names(3, "apis/apps/v1/deployments").is_empty());
    let deployments = dev.objects(2, "apis/apps/v1/deployments");
    assert_eq!(deployments.len(), 1);
    assert_eq!(deployments[0]["metadata"]["labels"]["team"], "payments");
    let owner = dev
        .objects(2, "api/v1/configmaps")
        .into_iter()
        .find(|cm| cm["metadata"]["name"] == "checkout-owner")
        .expect("stamp's ConfigMap");
    assert_eq!(
        owner["data"],
        json!({"team": "payments", "cluster": "dev/dev-2"})
    );
    let list = dev.ok(&["controller", "list"]);
    assert!(
        list.contains("label-rules") && list.contains("stamp"),
        "{list}"
    );
    dev.ok(&["delete", "-f", "examples/polyglot"]);
    dev.assert_clusters_empty();
}

#[test]
fn the_examples_use_the_repositorys_sdks_and_the_toolchains_are_the_clis() {
    // The polyglot example's projects name the repository's SDK and
    // contract in their project file rather than keeping copies.
    for (project, sdk, copies) in [
        (
            "examples/polyglot/label-rules",
            "sdk/python",
            ["wasmco_controller", "wit"],
        ),
        (
            "examples/polyglot/stamp",
            "sdk/js",
            ["wasmco_controller.js", "wit"],
        ),
    ] {
        let dir = repo().join(project);
        let file: Value =
            serde_json::from_slice(&std::fs::read(dir.join("controller.json")).unwrap()).unwrap();
        for (field, original) in [("sdk", sdk), ("wit", "wit")] {
            let named = file[field]
                .as_str()
                .unwrap_or_else(|| panic!("{project}: no {field}"));
            assert_eq!(
                dir.join(named).canonicalize().unwrap(),
                repo().join(original).canonicalize().unwrap(),
                "{project}'s {field}"
            );
        }
        for copy in copies {
            assert!(
                !dir.join(copy).exists(),
                "{project}/{copy} is a copy: the project uses the repository's"
            );
        }
    }
    let script = std::fs::read_to_string(repo().join("tests/sdk/toolchains.sh")).unwrap();
    for pinned in [
        format!(
            "componentize_py={}",
            wasmco::cli::languages::COMPONENTIZE_PY_VERSION
        ),
        format!(
            "componentize_js={}",
            wasmco::cli::languages::COMPONENTIZE_JS_VERSION
        ),
    ] {
        assert!(
            script.contains(&pinned),
            "tests/sdk/toolchains.sh does not pin {pinned}"
        );
    }
    let package = std::fs::read_to_string(repo().join("tests/sdk/package.json")).unwrap();
    let pin = format!(
        "\"@bytecodealliance/componentize-js\": \"{}\"",
        wasmco::cli::languages::COMPONENTIZE_JS_VERSION
    );
    assert!(
        package.contains(&pin),
        "tests/sdk/package.json does not pin {pin}"
    );
    assert!(
        toolchains()
            .iter()
            .all(|tool| std::path::Path::new(tool).exists())
    );
}

#[test]
fn a_missing_toolchain_is_named_with_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    for (lang, variable, advice) in [
        (
            "python",
            "WASMCO_COMPONENTIZE_PY",
            "pip install componentize-py==0.25.1",
        ),
        ("js", "WASMCO_COMPONENTIZE_JS", "npm install"),
    ] {
        let project = dir.path().join(lang);
        let project = project.to_str().unwrap();
        ok(&[
            "controller",
            "new",
            "x",
            "--type",
            "placement",
            "--lang",
            lang,
            "--dir",
            project,
        ]);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmco"))
            .args(["controller", "build", project])
            .env(variable, "/nonexistent/tool")
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("was not found") && stderr.contains(advice),
            "{stderr}"
        );
    }
    // Not a project at all.
    let output = wasmco(&["controller", "build", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a controller project"), "{stderr}");
}
