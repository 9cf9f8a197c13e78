use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wasmco_core::Kind;
use wasmco_core::wire::DigAction;

use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn fills_templates_and_maps_anchors() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "values.yaml",
        "ProjectName: shop\nVersion: v1\n",
    );
    write(
        dir.path(),
        "10-apps.yaml",
        "version: emco/v2\nresourceContext:\n  anchor: projects/{{.ProjectName}}/composite-apps\n\
         metadata: {name: store}\nspec: {compositeAppVersion: {{.Version}}}\n---\n\
         version: emco/v2\nresourceContext: {anchor: cluster-providers/p/clusters/c/labels}\n\
         clusterLabel: edge\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects/shop/composite-apps/store/v1/deployment-intent-groups/d/instantiate}\n",
    );
    let docs = load(&[dir.path().to_owned()], None).unwrap().documents;
    assert_eq!(docs.len(), 3);
    match docs[0].operation() {
        Operation::Resource { kind, item, .. } => {
            assert_eq!(kind, Kind::CompositeApp);
            assert_eq!(item, "projects/shop/composite-apps/store/v1");
        }
        other => panic!("{other:?}"),
    }
    match docs[1].operation() {
        Operation::Resource { item, body, .. } => {
            assert_eq!(item, "cluster-providers/p/clusters/c/labels/edge");
            assert_eq!(body, json!({"clusterLabel": "edge"}));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        docs[2].operation(),
        Operation::Action {
            action: Action::Dig(DigAction::Instantiate),
            ..
        }
    ));
    let lc = Document {
        anchor: "projects/p/logical-clouds/lc/instantiate".into(),
        ..docs[2].clone()
    };
    assert!(
        matches!(lc.operation(), Operation::Action { ref dig, .. } if dig == "projects/p/logical-clouds/lc")
    );
}

#[test]
fn missing_value_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let values = write(dir.path(), "v.yaml", "Other: x\nApps: [{Name: a}]\n");
    // As emcoctl (Go's templates, default options): a top-level value
    // not set prints `<no value>` and is false in `if`; wasmco says so.
    let file = write(
        dir.path(),
        "a.yaml",
        "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: \"{{.ProjectName}}\"}\n\
         {{if .KubeConfig2}}---\nversion: emco/v2\nresourceContext: {anchor: second}\n{{end}}",
    );
    let loaded = load(std::slice::from_ref(&file), Some(&values)).unwrap();
    assert_eq!(loaded.documents.len(), 1);
    assert_eq!(
        loaded.documents[0].metadata,
        Some(json!({"name": "<no value>"}))
    );
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("{{.ProjectName}}"));
    assert!(loaded.warnings[1].contains("{{.KubeConfig2}}"));
    // A field missing from a `range` item is an error naming it.
    let file = write(
        dir.path(),
        "b.yaml",
        "{{range .Apps}}version: emco/v2\nresourceContext: {anchor: \"{{.Cluster}}\"}\n{{end}}",
    );
    let error = load(std::slice::from_ref(&file), Some(&values))
        .unwrap_err()
        .to_string();
    assert!(error.contains("{{.Cluster}}"), "{error}");
    assert!(error.contains("it has Name"), "{error}");
    assert!(!error.contains("\"x\""), "no value is printed: {error}");
    let error = load(&[file], None).unwrap_err().to_string();
    assert!(error.contains("-v values.yaml"), "{error}");
}

#[test]
fn names_what_wasmco_lacks() {
    let doc = |anchor: &str, spec: Value| Document {
        origin: "t#1".into(),
        anchor: anchor.into(),
        metadata: Some(json!({"name": "x"})),
        spec: Some(spec),
        cluster_label: None,
        files: Vec::new(),
        many: false,
        unsupported: None,
    };
    // EMCO's own controllers go to the server, which binds the built-in
    // component; rsync and dtc's sub-controllers need nothing.
    assert!(matches!(
        doc("controllers", json!({"host": "gac", "port": 9033})).operation(),
        Operation::Resource {
            kind: Kind::Controller,
            multipart: false,
            ..
        }
    ));
    let mut rsync = doc("controllers", json!({"host": "rsync", "port": 9031}));
    rsync.metadata = Some(json!({"name": "rsync"}));
    assert!(matches!(rsync.operation(), Operation::Note { .. }));
    assert!(matches!(
        doc("dtc-controllers", json!({"host": "nps"})).operation(),
        Operation::Note { .. }
    ));
    // Under a DIG, any other segment is a kind some controller declares.
    let declared = doc(
        "projects/p/composite-apps/c/v1/deployment-intent-groups/d/network-controller-intent",
        json!({}),
    );
    let Operation::Resource {
        kind,
        item,
        multipart,
        ..
    } = declared.operation()
    else {
        panic!("a declared intent is posted")
    };
    assert_eq!(kind, Kind::Intent);
    assert!(item.ends_with("/network-controller-intent/x"), "{item}");
    assert!(!multipart);
    let Operation::Unsupported { reason } = doc("projects/p/nothing-here", json!({})).operation()
    else {
        panic!()
    };
    assert!(reason.contains("nothing-here"), "{reason}");
    // Each target's own actions, and only those.
    let dig = "projects/p/composite-apps/c/v1/deployment-intent-groups/d";
    for (anchor, acts) in [
        (format!("{dig}/migrate"), true),
        ("projects/p/logical-clouds/lc/update".into(), true),
        ("projects/p/logical-clouds/lc/stop".into(), true),
        ("cluster-providers/p/clusters/c/apply".into(), true),
        ("cluster-providers/p/clusters/c/terminate".into(), true),
        (format!("{dig}/apply"), false),
        ("cluster-providers/p/clusters/c/approve".into(), false),
        (
            "cluster-providers/p/ca-certs/c/enrollment/instantiate".into(),
            true,
        ),
        ("projects/p/ca-certs/c/distribution/terminate".into(), true),
        ("projects/p/ca-certs/c/distribution/stop".into(), false),
        ("projects/p/ca-certs/c/renewal/update".into(), false),
    ] {
        let operation = doc(&anchor, json!({})).operation();
        assert_eq!(
            matches!(operation, Operation::Action { .. }),
            acts,
            "{anchor}: {operation:?}"
        );
    }
}

#[test]
fn an_unknown_field_makes_its_document_unsupported_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "a.yaml",
        "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: a}\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: b}\nextra: 1\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects/a/composite-apps/c/v1/apps}\n\
         metadata: {name: web}\nfiles: [web.tgz]\n---\n\
         version: emco/v2\nresourceContext: {anchor: projects/a/composite-apps/c/v1/apps}\n\
         metadata: {name: two}\nfiles: [a.tgz, b.tgz]\n",
    );
    let documents = load(&[file], None).unwrap().documents;
    assert_eq!(documents.len(), 4);
    assert!(matches!(
        documents[0].operation(),
        Operation::Resource { .. }
    ));
    let Operation::Unsupported { reason } = documents[1].operation() else {
        panic!("an unknown field is unsupported");
    };
    assert!(reason.contains("extra"), "{reason}");
    let Operation::Resource { files, part, .. } = documents[2].operation() else {
        panic!("files: with one entry is the file");
    };
    assert_eq!(part, "file");
    assert!(files[0].ends_with("web.tgz"), "{files:?}");
    assert!(matches!(
        documents[3].operation(),
        Operation::Unsupported { .. }
    ));
}
