use super::*;
use serde_json::{Value, json};
use wasmco_guest::testing::{FlatRequest, TestCluster, TestNode};

/// A node fact as the host sends it: cpu in cores, memory in bytes.
fn node(name: &str, labels: Value, available: Value) -> Value {
    json!({"name": name, "labels": labels, "available": available})
}

fn requirement(name: &str, spec: Value) -> Value {
    json!({"kind": "hpa resource requirement", "metadata": {"name": name}, "spec": spec})
}

fn consumer(name: &str, spec: Value, requirements: Vec<Value>) -> Value {
    json!({"kind": "hpa resource consumer", "metadata": {"name": name}, "spec": spec,
           "children": {"resource-requirements": requirements}})
}

fn intent(name: &str, app: &str, consumers: Vec<Value>) -> Value {
    json!({"kind": "hpa intent", "metadata": {"name": name, "description": "description of hpa placement_intent"},
           "spec": {"app": app}, "children": {"hpa-resource-consumers": consumers}})
}

/// EMCO's `examples/hpa/hpa-test-advanced.yaml` consumer: the qat label and
/// 4 cores (limit 4), for `r1-http-client`'s container `http-client`.
fn advanced_consumer() -> Value {
    consumer(
        "hpa-placement-consumer-1",
        json!({"apiVersion": "v19", "kind": "Deployment", "name": "r1-http-client", "container": "http-client"}),
        vec![
            requirement(
                "hpa-placement-nonallocatable-resource-1",
                json!({"allocatable": false, "mandatory": true, "weight": 1,
                       "resource": {"key": "feature.node.kubernetes.io/intel_qat", "value": "true"}}),
            ),
            requirement(
                "hpa-placement-allocatable-resource-cpu-1",
                json!({"allocatable": true, "mandatory": true, "weight": 1,
                       "resource": {"name": "cpu", "requests": 4, "limits": 4}}),
            ),
        ],
    )
}

/// EMCO's `examples/hpa/hpa-example.yaml` consumer: 2 replicas of 1 core.
fn example_consumer() -> Value {
    consumer(
        "hpa-placement-consumer-1",
        json!({"apiVersion": "v19", "kind": "Deployment", "replicas": 2, "name": "r1-http-client", "container": "http-client"}),
        vec![requirement(
            "hpa-placement-allocatable-resource-1",
            json!({"allocatable": true, "mandatory": true, "weight": 1,
                   "resource": {"name": "cpu", "requests": 1, "limits": 1}}),
        )],
    )
}

/// The tree the host sends; the name is the one EMCO's example gives in the
/// group's `intents` document, which matches no stored hpa intent.
fn tree(all: Vec<Value>, nodes: Value) -> String {
    json!({"name": "hpa-placement-intent",
           "deploymentIntentGroup": {"project": "proj1", "compositeApp": "collection-composite-app",
                                     "compositeAppVersion": "v1", "name": "collection-deployment-intent-group",
                                     "logicalCloud": "default", "namespace": "default"},
           "intents": [], "all": all, "facts": {"nodes": nodes}})
    .to_string()
}

/// Apps placed on provider1's clusters `edge1`, `edge2`, `edge3`:
/// each `(app, [(cluster index, anyOf group)])`.
/// Where an app is placed: `(cluster index, anyOf group)` pairs.
type Placed<'a> = &'a [(u32, Option<&'a str>)];

/// The tests write each cluster's nodes as rsync describes them, under
/// `facts.nodes` of the tree (`provider+cluster`: `[{name, labels,
/// available}]`); the request carries them in its node table, as the host
/// sends them.
fn request(intent: String, placements: &[(&str, Placed<'_>)]) -> PlacementRequest {
    let cluster = |name| TestCluster {
        provider: "provider1",
        name,
        labels: &[],
        kv: &[],
    };
    let clusters = [cluster("edge1"), cluster("edge2"), cluster("edge3")];
    type Node = (String, Vec<(String, String)>, Vec<(String, i64)>);
    let facts: Value = serde_json::from_str(&intent).unwrap_or_default();
    let written: Vec<Vec<Node>> = clusters
        .iter()
        .map(|c| {
            let nodes = &facts["facts"]["nodes"][format!("{}+{}", c.provider, c.name)];
            nodes
                .as_array()
                .into_iter()
                .flatten()
                .map(|node| {
                    let entries =
                        |field: &str| node[field].as_object().cloned().unwrap_or_default();
                    (
                        node["name"].as_str().unwrap().to_owned(),
                        entries("labels")
                            .into_iter()
                            .map(|(k, v)| (k, v.as_str().unwrap().to_owned()))
                            .collect(),
                        entries("available")
                            .into_iter()
                            .map(|(r, amount)| (r, amount.as_i64().unwrap()))
                            .collect(),
                    )
                })
                .collect()
        })
        .collect();
    let labels: Vec<Vec<Vec<(&str, &str)>>> = written
        .iter()
        .map(|nodes| {
            nodes
                .iter()
                .map(|(_, labels, _)| {
                    labels
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect()
                })
                .collect()
        })
        .collect();
    let available: Vec<Vec<Vec<(&str, i64)>>> = written
        .iter()
        .map(|nodes| {
            nodes
                .iter()
                .map(|(_, _, available)| available.iter().map(|(r, a)| (r.as_str(), *a)).collect())
                .collect()
        })
        .collect();
    let nodes: Vec<Vec<TestNode<'_>>> = written
        .iter()
        .enumerate()
        .map(|(c, nodes)| {
            nodes
                .iter()
                .enumerate()
                .map(|(n, (name, _, _))| TestNode {
                    name,
                    labels: &labels[c][n],
                    available: &available[c][n],
                })
                .collect()
        })
        .collect();
    let node_lists: Vec<&[TestNode<'_>]> = nodes.iter().map(Vec::as_slice).collect();
    let mut extra: Vec<&str> = vec!["g1", "g2"];
    extra.extend(placements.iter().map(|(app, _)| *app));
    let flat = FlatRequest::with_nodes(&clusters, &extra, &node_lists);
    PlacementRequest {
        apps: placements.iter().map(|(app, _)| flat.id(app)).collect(),
        intent,
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        current: placements
            .iter()
            .map(|(app, clusters)| AppPlacement {
                app: flat.id(app),
                clusters: clusters.iter().map(|&(cluster, _)| cluster).collect(),
                groups: wasmco_guest::group_column(
                    clusters.iter().map(|&(_, group)| group.map(|g| flat.id(g))),
                ),
            })
            .collect(),
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

const ANY_OF_TWO: Placed<'static> = &[(0, Some("g1")), (1, Some("g1"))];

fn unplaced(edits: &[PlacementEdit]) -> Vec<(String, Vec<u32>)> {
    edits
        .iter()
        .map(|edit| match edit {
            PlacementEdit::Unplace(u) => (u.app.clone(), u.clusters.clone()),
            other => panic!("unexpected edit {other:?}"),
        })
        .collect()
}

#[test]
fn advanced_example_keeps_the_cluster_whose_qat_node_has_four_cores() {
    let nodes = json!({
        // The qat node has only 2 cores; the 8-core node has no qat.
        "provider1+edge1": [
            node("e1-n1", json!({"feature.node.kubernetes.io/intel_qat": "true"}), json!({"cpu": 2})),
            node("e1-n2", json!({}), json!({"cpu": 8})),
        ],
        "provider1+edge2": [
            node("e2-n1", json!({"feature.node.kubernetes.io/intel_qat": "true"}), json!({"cpu": 6})),
        ],
    });
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![advanced_consumer()],
    )];
    let edits = place(&request(
        tree(all, nodes),
        &[("http-client", ANY_OF_TWO), ("http-server", &[(0, None)])],
    ))
    .unwrap();
    assert_eq!(unplaced(&edits), [("http-client".to_owned(), vec![0])]);
}

#[test]
fn a_group_left_empty_fails_naming_intent_consumer_and_reason() {
    let nodes = json!({
        "provider1+edge1": [node("n", json!({"feature.node.kubernetes.io/intel_qat": "unknown"}), json!({"cpu": 64}))],
        "provider1+edge2": [node("n", json!({"feature.node.kubernetes.io/intel_qat": "true"}), json!({"cpu": 3}))],
    });
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![advanced_consumer()],
    )];
    let err = place(&request(tree(all, nodes), &[("http-client", ANY_OF_TWO)])).unwrap_err();
    let message = err.message;
    assert!(message.contains("anyOf group g1"), "{message}");
    assert!(
        message.contains(
            "provider1+edge1: hpa-intent hpa-placement-intent-1, hpa-resource-consumer \
             hpa-placement-consumer-1: no node has label feature.node.kubernetes.io/intel_qat=true"
        ),
        "{message}"
    );
    assert!(
        message.contains("provider1+edge2: hpa-intent hpa-placement-intent-1")
            && message.contains("replica 1 of 1 of r1-http-client needs cpu 4"),
        "{message}"
    );
}

#[test]
fn replicas_of_the_example_need_room_for_each_pod() {
    // Two pods of one core: edge1 has one core, edge2 one core on each of
    // two nodes, edge3 two cores on one node.
    let nodes = json!({
        "provider1+edge1": [node("a", json!({}), json!({"cpu": 1}))],
        "provider1+edge2": [node("a", json!({}), json!({"cpu": 1})), node("b", json!({}), json!({"cpu": 1}))],
        "provider1+edge3": [node("a", json!({}), json!({"cpu": 2}))],
    });
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![example_consumer()],
    )];
    let edits = place(&request(
        tree(all, nodes),
        &[(
            "http-client",
            &[(0, Some("g1")), (1, Some("g1")), (2, Some("g1"))],
        )],
    ))
    .unwrap();
    assert_eq!(unplaced(&edits), [("http-client".to_owned(), vec![0])]);
}

#[test]
fn pods_go_to_the_tightest_node_so_a_later_consumer_still_fits() {
    // First-fit would put the 4-core pod on the 8-core node and leave no
    // room for the 8-core pod; best fit uses the 4-core node.
    let nodes = json!({"provider1+edge1": [
        node("big", json!({}), json!({"cpu": 8})),
        node("small", json!({}), json!({"cpu": 4})),
    ]});
    let cores = |n: i64| {
        vec![requirement(
            "cpu",
            json!({"allocatable": true, "resource": {"name": "cpu", "requests": n}}),
        )]
    };
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![
            consumer(
                "small-pod",
                json!({"name": "r1-a", "container": "a"}),
                cores(4),
            ),
            consumer(
                "big-pod",
                json!({"name": "r1-b", "container": "b"}),
                cores(8),
            ),
        ],
    )];
    let edits = place(&request(
        tree(all.clone(), nodes.clone()),
        &[("http-client", &[(0, None)])],
    ))
    .unwrap();
    assert!(edits.is_empty(), "{edits:?}");

    // A third pod finds no room left, on an allOf cluster: an error.
    let mut crowded = all;
    crowded[0]["children"]["hpa-resource-consumers"]
        .as_array_mut()
        .unwrap()
        .push(consumer(
            "one-more",
            json!({"name": "r1-c", "container": "c"}),
            cores(1),
        ));
    let err = place(&request(
        tree(crowded, nodes),
        &[("http-client", &[(0, None)])],
    ))
    .unwrap_err();
    assert!(
        err.message.contains(
            "hpa-intent hpa-placement-intent-1, hpa-resource-consumer one-more: \
             cluster provider1+edge1 of app http-client (allOf)"
        ),
        "{}",
        err.message
    );
}

#[test]
fn charges_last_across_intents_of_an_app_but_not_across_apps() {
    let nodes = json!({"provider1+edge1": [node("n", json!({}), json!({"cpu": 4}))]});
    let three_cores = |intent_name: &str, app: &str| {
        intent(
            intent_name,
            app,
            vec![consumer(
                "c",
                json!({"name": "w", "container": "w"}),
                vec![requirement(
                    "cpu",
                    json!({"allocatable": "true", "resource": {"name": "cpu", "requests": 3}}),
                )],
            )],
        )
    };
    let two_apps = vec![three_cores("i1", "a"), three_cores("i2", "b")];
    let placed: Placed<'_> = &[(0, None)];
    assert!(
        place(&request(
            tree(two_apps, nodes.clone()),
            &[("a", placed), ("b", placed)]
        ))
        .unwrap()
        .is_empty()
    );
    let one_app = vec![three_cores("i1", "a"), three_cores("i2", "a")];
    let err = place(&request(tree(one_app, nodes), &[("a", placed)])).unwrap_err();
    assert!(
        err.message
            .contains("hpa-intent i2, hpa-resource-consumer c"),
        "{}",
        err.message
    );
}

#[test]
fn memory_is_asked_in_megabytes_and_offered_in_bytes() {
    let memory = consumer(
        "hpa-placement-consumer-1",
        json!({"apiVersion": "v19", "kind": "Deployment", "name": "r1-http-client", "container": "http-client"}),
        vec![requirement(
            "hpa-placement-allocatable-resource-memory-1",
            json!({"allocatable": true, "mandatory": true, "weight": 1,
                   "resource": {"name": "memory", "requests": 1000, "limits": 1000}}),
        )],
    );
    let nodes = json!({
        "provider1+edge1": [node("n", json!({}), json!({"memory": 999_999_999_i64}))],
        "provider1+edge2": [node("n", json!({}), json!({"memory": 1_000_000_000_i64}))],
    });
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![memory],
    )];
    let edits = place(&request(tree(all, nodes), &[("http-client", ANY_OF_TWO)])).unwrap();
    assert_eq!(unplaced(&edits), [("http-client".to_owned(), vec![0])]);
}

#[test]
fn one_pod_needs_all_its_amounts_on_the_same_node() {
    let consumer = consumer(
        "c",
        json!({"name": "w", "container": "w", "replicas": 1}),
        vec![
            requirement(
                "cpu",
                json!({"allocatable": true, "resource": {"name": "cpu", "requests": 2}}),
            ),
            requirement(
                "gpu",
                json!({"allocatable": true, "resource": {"name": "nvidia.com/gpu", "requests": 1}}),
            ),
        ],
    );
    let nodes = json!({
        // Cores on one node, the GPU on another.
        "provider1+edge1": [
            node("cpu", json!({}), json!({"cpu": 16})),
            node("gpu", json!({}), json!({"cpu": 1, "nvidia.com/gpu": 2})),
        ],
        "provider1+edge2": [node("both", json!({}), json!({"cpu": 2, "nvidia.com/gpu": 1}))],
    });
    let all = vec![intent("i", "http-client", vec![consumer])];
    let edits = place(&request(tree(all, nodes), &[("http-client", ANY_OF_TWO)])).unwrap();
    assert_eq!(unplaced(&edits), [("http-client".to_owned(), vec![0])]);
}

#[test]
fn vfw_hugepages_intents_filter_both_apps_and_leave_the_third_alone() {
    // EMCO's examples/hpa/hpa-vfw-apps.yaml: packetgen and firewall each
    // need a node with hugepages; sink has no hpa intent.
    let hugepages = |app: &str, workload: &str| {
        intent(
            &format!("hpa-placement-intent-{app}"),
            app,
            vec![consumer(
                "hpa-hugepages",
                json!({"apiVersion": "v19", "kind": "Deployment", "name": workload, "container": app}),
                vec![requirement(
                    "hpa-hugepages",
                    json!({"allocatable": false, "mandatory": true, "weight": 1,
                           "resource": {"key": "feature.node.kubernetes.io/hugepages", "value": "true"}}),
                )],
            )],
        )
    };
    let nodes = json!({
        "provider1+edge1": [node("n", json!({"feature.node.kubernetes.io/hugepages": "true"}), json!({}))],
        "provider1+edge2": [node("n", json!({"feature.node.kubernetes.io/hugepages": "false"}), json!({}))],
    });
    let all = vec![
        hugepages("packetgen", "fw0-packetgen"),
        hugepages("firewall", "fw0-firewall"),
    ];
    let edits = place(&request(
        tree(all, nodes),
        &[
            ("packetgen", ANY_OF_TWO),
            ("firewall", &[(0, Some("g2")), (1, Some("g2"))]),
            ("sink", &[(0, None), (1, None)]),
        ],
    ))
    .unwrap();
    assert_eq!(
        unplaced(&edits),
        [
            ("packetgen".to_owned(), vec![1]),
            ("firewall".to_owned(), vec![1])
        ]
    );
}

#[test]
fn a_cluster_without_node_facts_has_no_labels_or_capacity() {
    let nodes = json!({"provider1+edge2": [node("n", json!({}), json!({"cpu": 2}))]});
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![example_consumer()],
    )];
    let edits = place(&request(tree(all, nodes), &[("http-client", ANY_OF_TWO)])).unwrap();
    assert_eq!(unplaced(&edits), [("http-client".to_owned(), vec![0])]);
}

#[test]
fn consumers_without_requirements_and_apps_without_intents_change_nothing() {
    // EMCO drops every cluster of the group here; a consumer that asks for
    // nothing constrains nothing.
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![consumer(
            "hpa-placement-consumer-1",
            json!({"name": "r1-http-client"}),
            vec![],
        )],
    )];
    let edits = place(&request(
        tree(all, json!({})),
        &[("http-client", ANY_OF_TWO), ("http-server", &[(2, None)])],
    ))
    .unwrap();
    assert!(edits.is_empty(), "{edits:?}");
}

#[test]
fn cross_field_rules_emco_checks_on_store_fail_the_call() {
    let with = |consumer_spec: Value, resource: Value| {
        tree(
            vec![intent(
                "hpa-placement-intent-1",
                "http-client",
                vec![consumer(
                    "hpa-placement-consumer-1",
                    consumer_spec,
                    vec![requirement(
                        "hpa-placement-allocatable-resource-cpu-1",
                        json!({"allocatable": true, "resource": resource}),
                    )],
                )],
            )],
            json!({}),
        )
    };
    let err = place(&request(
        with(
            json!({"name": "r1-http-client", "container": "http-client"}),
            json!({"name": "cpu", "requests": 3, "limits": 2}),
        ),
        &[("http-client", ANY_OF_TWO)],
    ))
    .unwrap_err();
    assert_eq!(
        err.message,
        "hpa-intent hpa-placement-intent-1, hpa-resource-consumer hpa-placement-consumer-1, \
         resource-requirement hpa-placement-allocatable-resource-cpu-1: spec.resource requests \
         must be less or equal to limits for cpu"
    );
    let err = place(&request(
        with(
            json!({"name": "r1-http-client"}),
            json!({"name": "cpu", "requests": 1}),
        ),
        &[("http-client", ANY_OF_TWO)],
    ))
    .unwrap_err();
    assert!(
        err.message.contains("spec.container is missing"),
        "{}",
        err.message
    );
}

#[test]
fn an_app_with_intents_but_no_placement_is_an_error() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![example_consumer()],
    )];
    let mut req = request(tree(all, json!({})), &[("http-client", ANY_OF_TWO)]);
    req.current.clear();
    let err = place(&req).unwrap_err();
    assert!(
        err.message
            .starts_with("hpa-intent hpa-placement-intent-1: app http-client has no placement"),
        "{}",
        err.message
    );
}

#[test]
fn huge_replica_counts_are_charged_a_node_at_a_time() {
    let many = consumer(
        "c",
        json!({"name": "w", "container": "w", "replicas": 2_000_000_000_000_i64}),
        vec![requirement(
            "memory",
            json!({"allocatable": true, "resource": {"name": "memory", "requests": 1}}),
        )],
    );
    // 2e12 pods of 1 MB need 2e18 bytes: edge2's two nodes have exactly that.
    let nodes = json!({
        "provider1+edge1": [node("n", json!({}), json!({"memory": 1_000_000_000_000_000_000_i64}))],
        "provider1+edge2": [
            node("a", json!({}), json!({"memory": 1_000_000_000_000_000_000_i64})),
            node("b", json!({}), json!({"memory": 1_000_000_000_000_000_000_i64})),
        ],
    });
    let all = vec![intent("i", "http-client", vec![many])];
    let edits = place(&request(tree(all, nodes), &[("http-client", ANY_OF_TWO)])).unwrap();
    assert_eq!(unplaced(&edits), [("http-client".to_owned(), vec![0])]);
}

#[test]
fn an_intent_that_is_not_a_tree_is_an_error() {
    let err = place(&request(
        "\"hpa-placement-intent\"".into(),
        &[("http-client", ANY_OF_TWO)],
    ))
    .unwrap_err();
    assert!(
        err.message.starts_with("hpa intents are not valid"),
        "{}",
        err.message
    );
}
