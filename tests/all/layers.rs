//! The crate layering docs/architecture.md's Layout describes, held by a test:
//! cargo refuses cycles, but not a lower layer that starts to depend on a
//! higher one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Each layer crate and the wasmco crates it may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("wasmco-core", &[]),
    // wasmco-build builds the Helm renderer with Go when first needed.
    ("wasmco-runtime", &["wasmco-core", "wasmco-build"]),
    ("wasmco-store", &["wasmco-core"]),
    ("wasmco-pki", &["wasmco-core"]),
    (
        "wasmco-rsync",
        &["wasmco-core", "wasmco-store", "wasmco-pki"],
    ),
    ("wasmco-nodes", &["wasmco-core"]),
    (
        "wasmco-clusters",
        &["wasmco-core", "wasmco-pki", "wasmco-nodes"],
    ),
    (
        "wasmco-orchestrator",
        &[
            "wasmco-core",
            "wasmco-runtime",
            "wasmco-store",
            "wasmco-pki",
            "wasmco-nodes",
            "wasmco-clusters",
        ],
    ),
    (
        "wasmco-api",
        &[
            "wasmco-core",
            "wasmco-runtime",
            "wasmco-store",
            "wasmco-pki",
            "wasmco-orchestrator",
        ],
    ),
    ("wasmco-vcluster", &[]),
];

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new(cargo)
        .args(args)
        .current_dir(workspace)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn each_layer_depends_only_on_the_layers_below_it() {
    let metadata: Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]))
    .expect("cargo metadata is JSON");
    let uses: BTreeMap<&str, BTreeSet<&str>> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            let normal = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| {
                    d["kind"].is_null()
                        && d["name"].as_str().is_some_and(|n| n.starts_with("wasmco-"))
                })
                .filter_map(|d| d["name"].as_str())
                .collect();
            (package["name"].as_str().expect("name"), normal)
        })
        .collect();
    for (layer, allowed) in ALLOWED {
        let used = uses
            .get(layer)
            .unwrap_or_else(|| panic!("{layer} is a workspace member"));
        let above: Vec<&&str> = used.iter().filter(|d| !allowed.contains(d)).collect();
        assert!(
            above.is_empty(),
            "{layer} depends on {above:?}, which it may not"
        );
    }
}

#[test]
fn the_core_builds_without_the_engine_the_cluster_client_or_the_store() {
    let tree = cargo(&[
        "tree",
        "--offline",
        "-p",
        "wasmco-core",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]);
    let crates: BTreeSet<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    for heavy in ["wasmtime", "kube", "sled", "tokio"] {
        assert!(!crates.contains(heavy), "wasmco-core pulls in {heavy}");
    }
    assert!(crates.contains("serde"), "the tree was read: {tree}");
}
