use super::*;
use wasmco_guest::testing::{FlatRequest, TestCluster};

fn request(intent: serde_json::Value, groups: [Option<&str>; 3]) -> PlacementRequest {
    let clusters = [
        TestCluster {
            provider: "p",
            name: "big",
            labels: &[],
            kv: &[("cpu", "64"), ("memory", "256Gi"), ("nvidia.com/gpu", "4")],
        },
        TestCluster {
            provider: "p",
            name: "small",
            labels: &[],
            kv: &[("cpu", "2"), ("memory", "4Gi")],
        },
        TestCluster {
            provider: "p",
            name: "mid",
            labels: &[],
            kv: &[("cpu", "8000m"), ("memory", "32Gi")],
        },
    ];
    let flat = FlatRequest::new(&clusters, &["web", "g"]);
    PlacementRequest {
        apps: vec![flat.id("web")],
        intent: intent.to_string(),
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        current: vec![AppPlacement {
            app: flat.id("web"),
            clusters: (0u32..).take(groups.len()).collect(),
            groups: wasmco_guest::group_column(groups.iter().map(|g| g.map(|g| flat.id(g)))),
        }],
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

fn unplaced(edits: &[PlacementEdit]) -> Vec<u32> {
    match edits {
        [PlacementEdit::Unplace(u)] => u.clusters.clone(),
        [] => Vec::new(),
        other => panic!("unexpected edits {other:?}"),
    }
}

#[test]
fn clusters_short_of_cpu_or_memory_are_unplaced() {
    let edits = place(&request(
        serde_json::json!({"apps": [{"app": "web", "cpu": "4", "memory": "8Gi"}]}),
        [None; 3],
    ))
    .unwrap();
    assert_eq!(unplaced(&edits), vec![1]);
}

#[test]
fn device_request_keeps_only_clusters_declaring_the_device() {
    let edits = place(&request(
        serde_json::json!({"apps": [{"app": "web", "devices": {"nvidia.com/gpu": 2}}]}),
        [None, None, Some("g")],
    ))
    .unwrap_err();
    assert!(edits.message.contains("anyOf group g"), "{}", edits.message);
    let edits = place(&request(
        serde_json::json!({"apps": [{"app": "web", "devices": {"nvidia.com/gpu": 2}}]}),
        [None; 3],
    ))
    .unwrap();
    assert_eq!(unplaced(&edits), vec![1, 2]);
}

#[test]
fn nothing_left_is_an_error_with_the_reasons() {
    let err = place(&request(
        serde_json::json!({"apps": [{"app": "web", "cpu": "128"}]}),
        [None; 3],
    ))
    .unwrap_err();
    assert!(
        err.message.contains("p/small: cpu 2 < 128"),
        "{}",
        err.message
    );
}

#[test]
fn enough_everywhere_is_no_edit() {
    let edits = place(&request(
        serde_json::json!({"apps": [{"app": "web", "cpu": "500m"}]}),
        [None; 3],
    ))
    .unwrap();
    assert!(edits.is_empty());
}
