use super::*;
use bindings::exports::wasmco::controller::action::AppResources;
use bindings::wasmco::controller::types::{AppPlacement, PlacedCluster};
use wasmco_guest::testing::{FlatRequest, TestCluster};

fn request(intent: serde_json::Value) -> ActionRequest {
    let cluster = |name, labels| TestCluster {
        provider: "p",
        name,
        labels,
        kv: &[],
    };
    let flat = FlatRequest::new(
        &[
            cluster("c1", &["edge"]),
            cluster("c2", &[]),
            cluster("c3", &["edge"]),
        ],
        &["web"],
    );
    ActionRequest {
        intent: intent.to_string(),
        apps: vec![flat.id("web")],
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        placements: vec![AppPlacement {
            app: flat.id("web"),
            clusters: [0, 1]
                .map(|cluster| PlacedCluster {
                    cluster,
                    group: None,
                })
                .to_vec(),
        }],
        resources: vec![AppResources {
            app: flat.id("web"),
            base: Vec::new(),
            differing: Vec::new(),
        }],
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

#[test]
fn resource_without_cluster_info_goes_everywhere() {
    let edits = act(&request(serde_json::json!({"resources": [{"app": "web",
        "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}}]})))
    .unwrap();
    assert!(matches!(
        &edits[..],
        [ActionEdit::Add(AddResource {
            scope: ClusterScope::All,
            ..
        })]
    ));
}

#[test]
fn label_selector_keeps_only_placed_clusters_with_the_label() {
    let edits = act(&request(
        serde_json::json!({"customizations": [{"app": "web",
        "target": {"kind": "Deployment", "name": "web"}, "patchType": "merge",
        "patch": {"spec": {"replicas": 3}}, "clusterSpecific": "true",
        "clusterInfo": {"scope": "label", "clusterProvider": "p", "clusterLabel": "edge"}}]}),
    ))
    .unwrap();
    match &edits[..] {
        [ActionEdit::Patch(p)] => {
            assert!(matches!(&p.scope, ClusterScope::Only(c) if c == &[0]));
            assert!(matches!(&p.patch, Patch::MergePatch(m) if m.contains("replicas")));
        }
        other => panic!("unexpected edits {other:?}"),
    }
}

#[test]
fn deny_mode_selects_the_other_clusters() {
    let edits = act(&request(serde_json::json!({"customizations": [{"app": "web",
        "target": {"kind": "Deployment", "name": "web"}, "patchType": "json",
        "patch": [{"op": "add", "path": "/metadata/labels", "value": {}}],
        "clusterInfo": {"scope": "name", "clusterProvider": "p", "cluster": "c1", "mode": "deny"}}]})))
    .unwrap();
    assert!(
        matches!(&edits[..], [ActionEdit::Patch(p)] if matches!(&p.scope, ClusterScope::Only(c) if c == &[1]))
    );
}

#[test]
fn json_patch_that_is_not_an_array_is_refused() {
    let err = act(&request(
        serde_json::json!({"customizations": [{"app": "web",
        "target": {"kind": "Deployment", "name": "web"}, "patchType": "json", "patch": {}}]}),
    ))
    .unwrap_err();
    assert!(err.message.contains("customizations[0]"), "{}", err.message);
}

#[test]
fn unplaced_app_is_refused() {
    let err = act(&request(serde_json::json!({"resources": [{"app": "db",
        "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}}]})))
    .unwrap_err();
    assert!(err.message.contains("\"db\""), "{}", err.message);
}
