use serde_json::{Value, json};

use super::*;
use crate::catalog::ResourceType;

fn deployments(objects: &Objects) -> ResourceType {
    objects.find("apps", "v1", "deployments").unwrap().clone()
}

fn deployment(name: &str, replicas: u32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "labels": {"app": name, "tier": "web"}},
           "spec": {"replicas": replicas}})
}

#[test]
fn create_sets_server_fields_and_refuses_duplicates_and_missing_namespaces() {
    let mut objects = Objects::default();
    let ty = deployments(&objects);
    let (created, event) = objects
        .create(&ty, "default", deployment("web", 1))
        .unwrap();
    assert_eq!(event.kind, "ADDED");
    let meta = &created["metadata"];
    assert_eq!(meta["namespace"], "default");
    assert_eq!(meta["generation"], 1);
    assert!(meta["uid"].as_str().unwrap().len() == 36);
    assert!(
        meta["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(meta["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    let dup = objects
        .create(&ty, "default", deployment("web", 1))
        .unwrap_err();
    assert_eq!((dup.code, dup.reason), (409, "AlreadyExists"));
    assert_eq!(dup.message, "deployments.apps \"web\" already exists");
    let missing = objects
        .create(&ty, "nowhere", deployment("web", 1))
        .unwrap_err();
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "namespaces \"nowhere\" not found")
    );
    let nameless = objects
        .create(
            &ty,
            "default",
            json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        )
        .unwrap_err();
    assert_eq!((nameless.code, nameless.reason), (422, "Invalid"));
    let wrong_kind = objects
        .create(
            &ty,
            "default",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        )
        .unwrap_err();
    assert_eq!(wrong_kind.code, 400);
}

#[test]
fn apply_creates_then_updates_and_generation_follows_the_spec() {
    let mut objects = Objects::default();
    let ty = deployments(&objects);
    let (_, _, created) = objects
        .patch(
            &ty,
            "default",
            "web",
            PatchKind::Apply,
            deployment("web", 1),
        )
        .unwrap();
    assert!(created);
    let (labels_only, _, created) = objects
        .patch(
            &ty,
            "default",
            "web",
            PatchKind::Merge,
            json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .unwrap();
    assert!(!created);
    assert_eq!(labels_only["metadata"]["generation"], 1);
    let (scaled, event, _) = objects
        .patch(
            &ty,
            "default",
            "web",
            PatchKind::Apply,
            deployment("web", 3),
        )
        .unwrap();
    assert_eq!(event.kind, "MODIFIED");
    assert_eq!(scaled["spec"]["replicas"], 3);
    assert_eq!(scaled["metadata"]["generation"], 2);
    let (json_patched, _, _) = objects
        .patch(
            &ty,
            "default",
            "web",
            PatchKind::Json,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]),
        )
        .unwrap();
    assert_eq!(json_patched["spec"]["replicas"], 4);
    let merge_missing = objects
        .patch(&ty, "default", "db", PatchKind::Merge, json!({}))
        .unwrap_err();
    assert_eq!(merge_missing.code, 404);
}

#[test]
fn lists_filter_by_namespace_and_label_selector() {
    let mut objects = Objects::default();
    let ty = deployments(&objects);
    for name in ["web", "db", "cache"] {
        objects.create(&ty, "default", deployment(name, 1)).unwrap();
    }
    let names = |selector: &str| -> Vec<String> {
        let list = objects.list(&ty, Some("default"), &Selector::parse(selector).unwrap());
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(""), ["cache", "db", "web"]);
    assert_eq!(names("app=web"), ["web"]);
    assert_eq!(names("app!=web,tier"), ["cache", "db"]);
    assert_eq!(names("app in (db, web)"), ["db", "web"]);
    assert_eq!(names("app notin (db),!missing"), ["cache", "web"]);
    assert_eq!(
        objects.list(&ty, Some("default"), &Selector::default())["kind"],
        "DeploymentList"
    );
}

#[test]
fn a_crd_is_established_and_its_kind_served() {
    let mut objects = Objects::default();
    let crds = objects
        .find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap()
        .clone();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true}]}});
    objects.create(&crds, "", crd).unwrap();
    let stored = objects.get(&crds, "", "widgets.example.com").unwrap();
    assert_eq!(stored["status"]["conditions"][1]["type"], "Established");
    assert!(
        objects
            .find("example.com", "v1", "widgets")
            .is_some_and(|t| t.namespaced)
    );
}
