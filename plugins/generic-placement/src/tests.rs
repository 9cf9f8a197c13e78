use super::*;
use wasmco_guest::testing::{FlatRequest, TestCluster};

fn cluster<'a>(provider: &'a str, name: &'a str, labels: &'a [&'a str]) -> TestCluster<'a> {
    TestCluster {
        provider,
        name,
        labels,
        kv: &[],
    }
}

/// A request in the bindings' types from a flat one.
pub(crate) fn from_flat(flat: FlatRequest, intent: String, apps: &[&str]) -> PlacementRequest {
    PlacementRequest {
        apps: apps.iter().map(|a| flat.id(a)).collect(),
        intent,
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        current: Vec::new(),
        strings: Strings {
            data: flat.data,
            ends: flat.ends,
        },
    }
}

fn request(intent: serde_json::Value) -> PlacementRequest {
    let clusters = [
        cluster("p", "c1", &["edge", "east"]),
        cluster("p", "c2", &["edge", "west"]),
        cluster("p", "c3", &["core"]),
        cluster("q", "c1", &["edge"]),
    ];
    from_flat(
        FlatRequest::new(&clusters, &["a1", "a2"]),
        intent.to_string(),
        &["a1", "a2"],
    )
}

fn placed(edits: &[PlacementEdit]) -> Vec<(String, Vec<u32>, Option<String>)> {
    edits
        .iter()
        .map(|edit| match edit {
            PlacementEdit::Place(p) => (p.app.clone(), p.clusters.clone(), p.group.clone()),
            PlacementEdit::Unplace(_) => panic!("generic placement never unplaces"),
        })
        .collect()
}

#[test]
fn all_of_by_label_takes_every_labelled_cluster_of_the_provider_only() {
    let edits = place(&request(serde_json::json!({"appIntents": [
        {"app": "a1", "intent": {"allOf": [{"clusterProvider": "p", "clusterLabel": "edge"}]}}
    ]})))
    .unwrap();
    assert_eq!(placed(&edits), vec![("a1".into(), vec![0, 1], None)]);
}

#[test]
fn all_of_by_name_and_nested_any_of_make_a_group() {
    let edits = place(&request(serde_json::json!({"appIntents": [
        {"app": "a2", "intent": {"allOf": [
            {"clusterProvider": "p", "cluster": "c3"},
            {"anyOf": [{"clusterProvider": "p", "clusterLabel": "west"},
                       {"clusterProvider": "q", "cluster": "c1"}]}
        ], "anyOf": [{"clusterProvider": "p", "cluster": "c1"}, {"clusterProvider": "p", "cluster": "c2"}]}}
    ]})))
    .unwrap();
    assert_eq!(
        placed(&edits),
        vec![
            ("a2".into(), vec![1, 3], Some("allOf[1].anyOf".into())),
            ("a2".into(), vec![2], None),
            ("a2".into(), vec![0, 1], Some("anyOf".into())),
        ]
    );
}

#[test]
fn unknown_cluster_name_is_an_error_naming_it() {
    let err = place(&request(serde_json::json!({"appIntents": [
        {"app": "a1", "intent": {"allOf": [{"clusterProvider": "p", "cluster": "nope"}]}}
    ]})))
    .unwrap_err();
    assert!(err.message.contains("cluster p/nope"), "{}", err.message);
}

#[test]
fn all_of_label_matching_nothing_is_an_error() {
    let err = place(&request(serde_json::json!({"appIntents": [
        {"app": "a1", "intent": {"allOf": [{"clusterProvider": "q", "clusterLabel": "east"}]}}
    ]})))
    .unwrap_err();
    assert!(
        err.message.contains("label \"east\" of provider q"),
        "{}",
        err.message
    );
}

#[test]
fn entry_with_cluster_and_label_is_refused() {
    let err = place(&request(serde_json::json!({"appIntents": [
        {"app": "a1", "intent": {"allOf": [{"clusterProvider": "p", "cluster": "c1", "clusterLabel": "edge"}]}}
    ]})))
    .unwrap_err();
    assert!(
        err.message.contains("both cluster and clusterLabel"),
        "{}",
        err.message
    );
}

#[test]
fn unknown_app_is_refused() {
    let err = place(&request(serde_json::json!({"appIntents": [
        {"app": "zz", "intent": {"allOf": [{"clusterProvider": "p", "cluster": "c1"}]}}
    ]})))
    .unwrap_err();
    assert!(err.message.contains("\"zz\""), "{}", err.message);
}

#[test]
fn all_of_entries_overlapping_and_out_of_order_give_each_cluster_once_in_order() {
    let edits = place(&request(serde_json::json!({"appIntents": [
        {"app": "a1", "intent": {"allOf": [
            {"clusterProvider": "p", "cluster": "c3"},
            {"clusterProvider": "p", "clusterLabel": "edge"},
            {"clusterProvider": "p", "cluster": "c2"},
            {"clusterProvider": "q", "clusterLabel": "edge"}
        ]}}
    ]})))
    .unwrap();
    assert_eq!(placed(&edits), vec![("a1".into(), vec![0, 1, 2, 3], None)]);
}

#[test]
fn any_of_members_keep_the_selectors_order_without_repeats() {
    // The host keeps a group's first member, so the order is the intent's.
    let edits = place(&request(serde_json::json!({"appIntents": [
        {"app": "a1", "intent": {"anyOf": [
            {"clusterProvider": "p", "cluster": "c3"},
            {"clusterProvider": "p", "clusterLabel": "edge"},
            {"clusterProvider": "p", "cluster": "c3"},
            {"clusterProvider": "p", "cluster": "c1"}
        ]}}
    ]})))
    .unwrap();
    assert_eq!(
        placed(&edits),
        vec![("a1".into(), vec![2, 0, 1], Some("anyOf".into()))]
    );
}

#[test]
fn merged_is_the_ascending_union() {
    assert_eq!(merged(&[], &[]), Vec::<u32>::new());
    assert_eq!(merged(&[1, 4, 9], &[]), vec![1, 4, 9]);
    assert_eq!(merged(&[2, 4], &[1, 4, 5, 7]), vec![1, 2, 4, 5, 7]);
}
