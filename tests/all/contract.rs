//! The shipped plugins, built to components, called through the real runtime.

use serde_json::{Value, json};
use wasmco_core::resource::Resource;
use wasmco_orchestrator::draft::{AppDraft, DraftContext};
use wasmco_orchestrator::{Step, run_controllers};
use wasmco_runtime::{Controller, ControllerKind};

use crate::support::{cluster, load};

fn deployment(name: &str) -> Resource {
    Resource::from_manifest(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": name, "image": "nginx"}]}}}}))
    .unwrap()
}

fn draft() -> DraftContext {
    DraftContext::new(
        vec![
            AppDraft::new("web", vec![deployment("web")]),
            AppDraft::new("db", vec![deployment("db")]),
        ],
        vec![
            cluster(
                "edge",
                "e1",
                &["edge", "east"],
                &[("cpu", "4"), ("memory", "8Gi")],
            ),
            cluster(
                "edge",
                "e2",
                &["edge", "west"],
                &[("cpu", "32"), ("memory", "64Gi")],
            ),
            cluster(
                "edge",
                "e3",
                &["edge", "west"],
                &[("cpu", "16"), ("memory", "32Gi")],
            ),
            cluster(
                "core",
                "k1",
                &["core"],
                &[("cpu", "128"), ("memory", "512Gi"), ("nvidia.com/gpu", "8")],
            ),
        ],
    )
}

fn names(context: &DraftContext, app: &str) -> Vec<String> {
    let app = context.apps().iter().find(|a| a.name == app).unwrap();
    app.clusters()
        .into_iter()
        .map(|c| context.clusters()[c as usize].name.clone())
        .collect()
}

fn manifest(
    context: &DraftContext,
    app: &str,
    cluster: &str,
    kind: &str,
    name: &str,
) -> Option<Value> {
    let index = context
        .clusters()
        .iter()
        .position(|c| c.name == cluster)
        .unwrap() as u32;
    let app = context.apps().iter().find(|a| a.name == app).unwrap();
    app.resources_on(index)
        .into_iter()
        .find(|r| r.key.kind == kind && r.key.name == name)
        .map(|r| r.manifest.clone())
}

fn generic() -> Controller {
    load(
        "generic-placement",
        ControllerKind::Placement,
        "generic_placement.wasm",
    )
}

fn generic_intent() -> String {
    json!({"appIntents": [
        {"app": "web", "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]}},
        {"app": "db", "intent": {
            "allOf": [{"clusterProvider": "core", "cluster": "k1"}],
            "anyOf": [{"clusterProvider": "edge", "clusterLabel": "west"}]}}
    ]})
    .to_string()
}

#[test]
fn generic_placement_lands_apps_by_label_and_keeps_one_of_any_of() {
    let generic = generic();
    let mut context = draft();
    run_controllers(
        &mut context,
        &[Step {
            controller: &generic,
            intent: generic_intent(),
            nodes: None,
        }],
    )
    .unwrap();
    assert_eq!(names(&context, "web"), ["e1", "e2", "e3"]);
    assert_eq!(names(&context, "db"), ["k1", "e2"]);
}

#[test]
fn generic_placement_reports_a_label_that_matches_nothing() {
    let generic = generic();
    let mut context = draft();
    let intent = json!({"appIntents": [{"app": "web", "intent": {"allOf": [
        {"clusterProvider": "edge", "clusterLabel": "north"}]}}]});
    let err = run_controllers(
        &mut context,
        &[Step {
            controller: &generic,
            intent: intent.to_string(),
            nodes: None,
        }],
    )
    .unwrap_err();
    assert_eq!(err.controller, "generic-placement");
    assert!(
        err.to_string().contains("label \"north\" of provider edge"),
        "{err}"
    );
    assert!(context.apps().iter().all(|a| a.placement.is_empty()));
}

#[test]
fn capacity_placement_drops_clusters_short_of_what_the_app_asks() {
    let generic = generic();
    let capacity = load(
        "capacity-placement",
        ControllerKind::Placement,
        "capacity_placement.wasm",
    );
    let mut context = draft();
    let wants = json!({"apps": [{"app": "web", "cpu": "8", "memory": "16Gi"}]}).to_string();
    run_controllers(
        &mut context,
        &[
            Step {
                controller: &generic,
                intent: generic_intent(),
                nodes: None,
            },
            Step {
                controller: &capacity,
                intent: wants,
                nodes: None,
            },
        ],
    )
    .unwrap();
    assert_eq!(names(&context, "web"), ["e2", "e3"]);
    assert_eq!(names(&context, "db"), ["k1", "e2"]);
}

#[test]
fn gac_adds_and_patches_per_cluster() {
    let generic = generic();
    let gac = load("gac", ControllerKind::Action, "gac.wasm");
    let mut context = draft();
    let gac_intent = json!({
    "resources": [{"app": "web", "manifest": {"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "west-config"}, "data": {"zone": "west"}},
        "clusterSpecific": "true",
        "clusterInfo": {"scope": "label", "clusterProvider": "edge", "clusterLabel": "west", "mode": "allow"}}],
    "customizations": [
        {"app": "web", "target": {"kind": "Deployment", "name": "web"}, "patchType": "merge",
         "patch": {"spec": {"replicas": 2}}},
        {"app": "web", "target": {"kind": "Deployment", "name": "web"}, "patchType": "json",
         "patch": [{"op": "replace", "path": "/spec/replicas", "value": 5}],
         "clusterSpecific": true,
         "clusterInfo": {"scope": "name", "clusterProvider": "edge", "cluster": "e3"}}
    ]});
    run_controllers(
        &mut context,
        &[
            Step {
                controller: &generic,
                intent: generic_intent(),
                nodes: None,
            },
            Step {
                controller: &gac,
                intent: gac_intent.to_string(),
                nodes: None,
            },
        ],
    )
    .unwrap();
    let replicas = |cluster| {
        manifest(&context, "web", cluster, "Deployment", "web").unwrap()["spec"]["replicas"].clone()
    };
    assert_eq!(replicas("e1"), json!(2));
    assert_eq!(replicas("e2"), json!(2));
    assert_eq!(replicas("e3"), json!(5));
    assert!(manifest(&context, "web", "e1", "ConfigMap", "west-config").is_none());
    assert_eq!(
        manifest(&context, "web", "e2", "ConfigMap", "west-config").unwrap()["data"]["zone"],
        json!("west")
    );
    assert!(manifest(&context, "web", "e3", "ConfigMap", "west-config").is_some());
    // db was not customised: its manifest is the base, untouched.
    assert_eq!(
        manifest(&context, "db", "k1", "Deployment", "db").unwrap()["spec"]["replicas"],
        json!(1)
    );
    // One base per app, only e2/e3 hold differences for web.
    let web = &context.apps()[0];
    assert_eq!(web.base.len(), 1);
    assert_eq!(web.overrides.len(), 2);
}

#[test]
fn two_action_controllers_setting_one_field_the_later_wins() {
    let generic = generic();
    let first = load("gac-first", ControllerKind::Action, "gac.wasm");
    let second = load("gac-second", ControllerKind::Action, "gac.wasm");
    let set = |n: u32| {
        json!({"customizations": [{"app": "db", "target": {"kind": "Deployment", "name": "db"},
            "patchType": "merge", "patch": {"spec": {"replicas": n}}}]})
        .to_string()
    };
    let mut context = draft();
    run_controllers(
        &mut context,
        &[
            Step {
                controller: &generic,
                intent: generic_intent(),
                nodes: None,
            },
            Step {
                controller: &first,
                intent: set(3),
                nodes: None,
            },
            Step {
                controller: &second,
                intent: set(9),
                nodes: None,
            },
        ],
    )
    .unwrap();
    assert_eq!(
        manifest(&context, "db", "k1", "Deployment", "db").unwrap()["spec"]["replicas"],
        json!(9)
    );
}

#[test]
fn a_controller_built_against_contract_0_1_still_runs() {
    // Its placements arrive as 0.1.0's records, converted from the columns,
    // and its edits come back: a ConfigMap per app, naming the placement
    // it saw, on exactly the app's clusters.
    let old = load(
        "writes-placements",
        ControllerKind::Action,
        "guest_contract_0_1.wasm",
    );
    let generic = generic();
    let mut context = draft();
    run_controllers(
        &mut context,
        &[
            Step {
                controller: &generic,
                intent: generic_intent(),
                nodes: None,
            },
            Step {
                controller: &old,
                intent: String::new(),
                nodes: None,
            },
        ],
    )
    .unwrap();
    let placed = |app: &str, cluster: &str| {
        manifest(
            &context,
            app,
            cluster,
            "ConfigMap",
            &format!("placed-{app}"),
        )
        .map(|cm| cm["data"]["placed"].as_str().unwrap().to_owned())
    };
    assert_eq!(placed("web", "e1").as_deref(), Some("0,1,2"));
    assert_eq!(placed("web", "k1"), None);
    // db: k1 from allOf, e2 the one kept of its anyOf group.
    let db = placed("db", "k1").unwrap();
    let entries: Vec<&str> = db.split(',').collect();
    assert_eq!(entries.len(), 2, "{db}");
    assert_eq!(entries[0], "3", "allOf carries no group: {db}");
    assert!(
        entries[1].starts_with("1@"),
        "anyOf carries its group: {db}"
    );
    assert_eq!(placed("db", "e2").as_deref(), Some(db.as_str()));
    assert_eq!(placed("db", "e3"), None);
}
