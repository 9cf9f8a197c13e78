//! Bodies are those of EMCO's `examples/sfc/sfc-ca.yaml` (three functions,
//! slb, ngfw and sdewan, between virtual and dynamic networks, a client
//! selector and a provider network at each end).

use serde_json::{Value, json};

use super::*;
use bindings::exports::wasmco::controller::action::{AppResources, Resource};
use bindings::wasmco::controller::types::AppPlacement;
use wasmco_guest::testing::{FlatRequest, TestCluster};

fn cluster<'a>(name: &'a str) -> TestCluster<'a> {
    TestCluster {
        provider: "provider1",
        name,
        labels: &[],
        kv: &[],
    }
}

/// A request whose apps are placed as `placements` says, each rendering a
/// Deployment named after it.
fn request(
    tree: Value,
    clusters: &[TestCluster<'_>],
    placements: &[(&str, &[u32])],
) -> ActionRequest {
    let apps: Vec<&str> = placements.iter().map(|(app, _)| *app).collect();
    let flat = FlatRequest::new(clusters, &apps);
    ActionRequest {
        intent: tree.to_string(),
        apps: apps.iter().map(|app| flat.id(app)).collect(),
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        placements: placements
            .iter()
            .map(|(app, placed)| AppPlacement {
                app: flat.id(app),
                clusters: placed.to_vec(),
                groups: Vec::new(),
            })
            .collect(),
        resources: apps
            .iter()
            .map(|app| AppResources {
                app: flat.id(app),
                base: vec![Resource {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: (*app).to_owned(),
                    namespace: None,
                    manifest: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                     "metadata": {"name": app}})
                    .to_string(),
                }],
                differing: Vec::new(),
            })
            .collect(),
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

fn link(name: &str, left: &str, right: &str) -> Value {
    json!({"kind": "links", "metadata": {"name": name},
           "spec": {"leftNet": left, "rightNet": right, "linkLabel": format!("app={name}"),
                    "app": name, "workloadResource": name, "resourceType": "Deployment"}})
}

fn sfc_ca(links: Vec<Value>) -> Value {
    let chain = json!({
        "kind": "network-chains",
        "metadata": {"name": "sfc-chain"},
        "spec": {"chainType": "Routing", "namespace": "sfc-head"},
        "children": {
            "links": links,
            "client-selectors": [
                {"kind": "client-selectors", "metadata": {"name": "sfc-left-client"},
                 "spec": {"chainEnd": "left", "podSelector": {"matchLabels": {"sfc": "head"}},
                          "namespaceSelector": {"matchLabels": {"sfc": "head"}}}},
                {"kind": "client-selectors", "metadata": {"name": "sfc-right-client"},
                 "spec": {"chainEnd": "right", "podSelector": {"matchLabels": {"sfc": "tail"}},
                          "namespaceSelector": {"matchLabels": {"sfc": "tail"}}}},
            ],
            "provider-networks": [
                {"kind": "provider-networks", "metadata": {"name": "left-pnet"},
                 "spec": {"chainEnd": "left", "providerNetwork": "left-pnetwork",
                          "gatewayIp": "172.30.10.2", "subnet": "172.30.10.0/24"}},
                {"kind": "provider-networks", "metadata": {"name": "right-pnet"},
                 "spec": {"chainEnd": "right", "providerNetwork": "right-pnetwork",
                          "gatewayIp": "172.30.20.2", "subnet": "172.30.20.0/24"}},
            ],
        },
    });
    json!({
        "name": "sfc-chain",
        "deploymentIntentGroup": {"project": "proj1", "compositeApp": "sfc-ca",
            "compositeAppVersion": "v1", "name": "sfc-dig", "logicalCloud": "lc", "namespace": "sfc-head"},
        "intents": [chain],
        "all": [chain],
    })
}

fn three_links() -> Vec<Value> {
    // Stored in another order than the chain's.
    vec![
        link("ngfw", "dynnet1", "dynnet2"),
        link("sdewan", "dynnet2", "virnet2"),
        link("slb", "virnet1", "dynnet1"),
    ]
}

#[test]
fn the_chain_walks_the_links_and_fills_each_end() {
    let clusters = [cluster("edge1"), cluster("edge2")];
    let request = request(
        sfc_ca(three_links()),
        &clusters,
        &[("slb", &[0, 1]), ("ngfw", &[0, 1]), ("sdewan", &[0])],
    );
    let edits = act(&request).unwrap();
    let ActionEdit::Add(added) = &edits[0] else {
        panic!("{edits:?}")
    };
    assert_eq!(added.app, "slb", "with the head function");
    assert!(
        matches!(&added.scope, ClusterScope::Only(c) if c == &[0]),
        "only where every function is"
    );
    let chaining: Value = serde_json::from_str(&added.manifest).unwrap();
    assert_eq!(chaining["kind"], "NetworkChaining");
    assert_eq!(chaining["metadata"]["name"], "sfc-chain");
    let routing = &chaining["spec"]["routingSpec"];
    assert_eq!(
        routing["networkChain"],
        "net=virnet1,app=slb,net=dynnet1,app=ngfw,net=dynnet2,app=sdewan,net=virnet2"
    );
    assert_eq!(routing["namespace"], "sfc-head");
    assert_eq!(
        routing["left"],
        json!([{"networkName": "left-pnetwork", "gatewayIp": "172.30.10.2",
                "subnet": "172.30.10.0/24", "podSelector": {"matchLabels": {"sfc": "head"}},
                "namespaceSelector": {"matchLabels": {"sfc": "head"}}}])
    );
    assert_eq!(routing["right"][0]["networkName"], "right-pnetwork");
    let labelled: Vec<(&str, Value)> = edits[1..]
        .iter()
        .map(|edit| match edit {
            ActionEdit::Patch(p) => {
                assert_eq!(p.target.kind, "Deployment");
                let Patch::MergePatch(patch) = &p.patch else {
                    panic!()
                };
                (p.app.as_str(), serde_json::from_str(patch).unwrap())
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(labelled.len(), 3);
    assert_eq!(labelled[0].0, "slb");
    assert_eq!(
        labelled[0].1,
        json!({"spec": {"template": {"metadata": {"labels": {"app": "slb"}}}}})
    );
}

#[test]
fn links_that_are_not_one_chain_are_refused_by_name() {
    let clusters = [cluster("edge1")];
    let placed: &[(&str, &[u32])] = &[("slb", &[0]), ("ngfw", &[0]), ("sdewan", &[0])];
    let cases = [
        (
            vec![link("slb", "a", "b"), link("ngfw", "c", "d")],
            "several networks start",
        ),
        (vec![link("slb", "a", "b"), link("ngfw", "b", "a")], "loop"),
        (
            vec![link("slb", "a", "b"), link("ngfw", "a", "c")],
            "two links start at",
        ),
        (vec![], "no links"),
    ];
    for (links, words) in cases {
        let message = act(&request(sfc_ca(links), &clusters, placed))
            .unwrap_err()
            .message;
        assert!(message.contains("sfc intent \"sfc-chain\""), "{message}");
        assert!(message.contains(words), "{words}: {message}");
    }
    let message = act(&request(
        sfc_ca(three_links()),
        &clusters,
        &[("slb", &[0]), ("ngfw", &[0]), ("sdewan", &[])],
    ))
    .unwrap_err()
    .message;
    assert!(
        message.contains("no clusters with all the apps"),
        "{message}"
    );
}

#[test]
fn a_chain_without_clients_or_networks_at_an_end_is_refused() {
    let mut tree = sfc_ca(three_links());
    let chain = &mut tree["all"][0]["children"];
    chain["client-selectors"].as_array_mut().unwrap().pop();
    chain["provider-networks"].as_array_mut().unwrap().pop();
    let clusters = [cluster("edge1")];
    let message = act(&request(
        tree,
        &clusters,
        &[("slb", &[0]), ("ngfw", &[0]), ("sdewan", &[0])],
    ))
    .unwrap_err()
    .message;
    assert!(message.contains("right end"), "{message}");
}

#[test]
fn the_declared_schemas_take_emcos_bodies_and_refuse_a_bad_label() {
    let declared: Value = serde_json::from_str(include_str!("../intents.json")).unwrap();
    let schema = |segment: &str| {
        let kind = declared["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["segment"] == segment)
            .unwrap();
        jsonschema::validator_for(&kind["schema"]).unwrap()
    };
    let links = schema("links");
    assert!(links.is_valid(&link("slb", "virnet1", "dynnet1")["spec"]));
    let mut bad = link("slb", "virnet1", "dynnet1")["spec"].clone();
    bad["linkLabel"] = json!("slb");
    assert!(!links.is_valid(&bad));
    let tree = sfc_ca(three_links());
    let chain = &tree["all"][0];
    assert!(schema("network-chains").is_valid(&chain["spec"]));
    for (segment, children) in chain["children"].as_object().unwrap() {
        let validator = schema(segment);
        for child in children.as_array().unwrap() {
            assert!(validator.is_valid(&child["spec"]), "{segment}: {child}");
        }
    }
}

#[test]
fn the_chains_clusters_are_those_of_every_function_in_the_heads_order() {
    let placements = vec![vec![4, 0, 2, 2, 7], vec![2, 7, 9, 4], vec![7, 4, 2, 4]];
    assert_eq!(placed_everywhere(&placements), [4, 2, 7]);
    assert_eq!(placed_everywhere(&[vec![1, 2], vec![3]]), Vec::<u32>::new());
    assert_eq!(placed_everywhere(&[]), Vec::<u32>::new());
}
