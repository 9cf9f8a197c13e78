use std::sync::Arc;

use serde_json::{Value, json};
use wasmco_core::{Kind, Reference};

use super::*;
use crate::SledStore;

fn db() -> (tempfile::TempDir, ResourceDb) {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    (dir, ResourceDb::new(Arc::new(store)))
}

fn id(kind: Kind, path: &[&str]) -> ResourceId {
    ResourceId::new(kind, path.iter().map(|s| s.to_string()).collect())
}

fn plain(name: &str) -> Write {
    Write {
        body: json!({"metadata": {"name": name}}),
        references: Vec::new(),
        file: None,
    }
}

#[test]
fn create_needs_the_parent_and_a_free_name() {
    let (_dir, db) = db();
    let cluster = id(Kind::Cluster, &["p", "c1"]);
    assert!(matches!(
        db.create(&cluster, plain("c1")),
        Err(DbError::ParentNotFound(_))
    ));
    db.create(&id(Kind::ClusterProvider, &["p"]), plain("p"))
        .unwrap();
    db.create(&cluster, plain("c1")).unwrap();
    assert!(matches!(
        db.create(&cluster, plain("c1")),
        Err(DbError::AlreadyExists(_))
    ));
    let listed = db.list(Kind::Cluster, &["p".into()]).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].0, cluster);
}

#[test]
fn references_must_resolve_and_block_deletion_until_dropped() {
    let (_dir, db) = db();
    let controller = id(Kind::Controller, &["gac"]);
    let reference = Reference {
        field: "spec.intent.gac".into(),
        kind: Kind::Controller,
        path: vec!["gac".into()],
    };
    db.create(&id(Kind::Project, &["pr"]), plain("pr")).unwrap();
    let with_ref = Write {
        references: vec![reference],
        ..plain("x")
    };
    let holder = id(Kind::CompositeProfile, &["pr", "ca", "v1", "x"]);
    db.create(&id(Kind::CompositeApp, &["pr", "ca", "v1"]), plain("ca"))
        .unwrap();
    let err = db.create(&holder, with_ref.clone()).unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.intent.gac: controller gac not found"),
        "{err}"
    );
    db.create(&controller, plain("gac")).unwrap();
    db.create(&holder, with_ref).unwrap();
    let err = db.delete(&controller).unwrap_err();
    assert!(
        err.to_string()
            .contains("in use by composite profile pr/ca/v1/x"),
        "{err}"
    );
    db.update(&holder, plain("x")).unwrap();
    db.delete(&controller).unwrap();
}

#[test]
fn children_block_deletion_and_owned_ones_go_with_the_parent() {
    let (_dir, db) = db();
    db.create(&id(Kind::ClusterProvider, &["p"]), plain("p"))
        .unwrap();
    db.create(&id(Kind::Cluster, &["p", "c1"]), plain("c1"))
        .unwrap();
    db.create(&id(Kind::ClusterLabel, &["p", "c1", "edge"]), plain("edge"))
        .unwrap();
    let err = db.delete(&id(Kind::ClusterProvider, &["p"])).unwrap_err();
    assert!(err.to_string().contains("still has cluster p/c1"), "{err}");
    db.delete(&id(Kind::Cluster, &["p", "c1"])).unwrap();
    assert!(
        db.list(Kind::ClusterLabel, &["p".into(), "c1".into()])
            .is_err()
    );
    db.create(&id(Kind::Cluster, &["p", "c1"]), plain("c1"))
        .unwrap();
    assert!(
        db.list(Kind::ClusterLabel, &["p".into(), "c1".into()])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn cached_lists_follow_every_write() {
    let (_dir, db) = db();
    db.create(&id(Kind::Project, &["a"]), plain("a")).unwrap();
    let names = |db: &ResourceDb| -> Vec<String> {
        let array: Value =
            serde_json::from_slice(&db.list_json(Kind::Project, &[]).unwrap()).unwrap();
        array
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&db), ["a"]);
    assert_eq!(names(&db), ["a"]);
    db.create(&id(Kind::Project, &["b"]), plain("b")).unwrap();
    assert_eq!(names(&db), ["a", "b"]);
    db.update(
        &id(Kind::Project, &["b"]),
        Write {
            body: json!({"metadata": {"name": "b"}, "spec": {"x": 1}}),
            ..plain("b")
        },
    )
    .unwrap();
    let array: Value = serde_json::from_slice(&db.list_json(Kind::Project, &[]).unwrap()).unwrap();
    assert_eq!(array[1]["spec"]["x"], 1);
    db.delete(&id(Kind::Project, &["a"])).unwrap();
    assert_eq!(names(&db), ["b"]);
}
