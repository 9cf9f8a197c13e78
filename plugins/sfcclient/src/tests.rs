//! Bodies are EMCO's `examples/sfc`: the chain's client selectors of
//! `sfc-ca.yaml` and the client intents of `sfc-left-client.yaml` and
//! `sfc-right-client-2.yaml`, with the logical clouds of
//! `sfc-logical-clouds.yaml`.

use serde_json::{Value, json};

use super::*;
use bindings::wasmco::controller::types::AppPlacement;
use wasmco_guest::testing::{FlatRequest, TestCluster};

fn request(tree: Value) -> ActionRequest {
    let clusters = [TestCluster {
        provider: "provider1",
        name: "cluster1",
        labels: &[],
        kv: &[],
    }];
    let flat = FlatRequest::new(&clusters, &["left-nginx"]);
    ActionRequest {
        intent: tree.to_string(),
        apps: vec![flat.id("left-nginx")],
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        placements: vec![AppPlacement {
            app: flat.id("left-nginx"),
            clusters: vec![0],
            groups: Vec::new(),
        }],
        resources: Vec::new(),
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

fn selector(name: &str, end: &str, label: &str) -> Value {
    json!({"kind": "client-selectors", "metadata": {"name": name},
           "spec": {"chainEnd": end, "podSelector": {"matchLabels": {"sfc": label}},
                    "namespaceSelector": {"matchLabels": {"sfc": label}}}})
}

fn tree(end: &str, cloud_labels: Value) -> Value {
    let client = json!({"kind": "sfc-clients", "metadata": {"name": "sfc-left-client-intent"},
        "spec": {"chainEnd": end, "sfcIntent": "sfc-intent", "compositeApp": "sfc-ca",
                 "compositeAppVersion": "v1", "deploymentIntentGroup": "sfc-deployment-intent-group",
                 "app": "left-nginx", "workloadResource": "left-nginx", "resourceType": "Deployment"}});
    json!({
        "name": "<no value>",
        "deploymentIntentGroup": {"project": "proj1", "compositeApp": "sfc-left-client-ca",
            "compositeAppVersion": "v1", "name": "sfc-left-dig", "logicalCloud": "left2",
            "logicalCloudLabels": cloud_labels, "namespace": "sfc-head-two"},
        "intents": [],
        "all": [client],
        "others": [{"compositeApp": "sfc-ca", "compositeAppVersion": "v1",
                    "name": "sfc-deployment-intent-group",
                    "intents": [{"kind": "network-chains", "metadata": {"name": "sfc-intent"},
                                 "spec": {"chainType": "Routing", "namespace": "default"},
                                 "children": {"client-selectors": [
                                     selector("leftclient2", "left", "head2"),
                                     selector("left-client-selector", "left", "head"),
                                     selector("right-client-selector", "right", "tail")]}}]}],
    })
}

fn patched(edits: &[ActionEdit]) -> (&str, Value) {
    match edits {
        [ActionEdit::Patch(p)] => {
            assert_eq!(
                (p.target.kind.as_str(), p.target.name.as_str()),
                ("Deployment", "left-nginx")
            );
            let Patch::MergePatch(patch) = &p.patch else {
                panic!()
            };
            (p.app.as_str(), serde_json::from_str(patch).unwrap())
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_clients_pods_get_the_selector_its_logical_cloud_matches() {
    // left2's labels {sfc: head2, other: testlabel} match leftclient2's.
    let edits = act(&request(tree(
        "left",
        json!({"sfc": "head2", "other": "testlabel"}),
    )))
    .unwrap();
    let (app, patch) = patched(&edits);
    assert_eq!(app, "left-nginx");
    assert_eq!(
        patch,
        json!({"spec": {"template": {"metadata": {"labels": {"sfc": "head2"}}}}})
    );
    // left's {sfc: head} skips leftclient2 and takes the next.
    let edits = act(&request(tree("left", json!({"sfc": "head"})))).unwrap();
    assert_eq!(
        patched(&edits).1["spec"]["template"]["metadata"]["labels"]["sfc"],
        "head"
    );
}

#[test]
fn no_matching_selector_or_chain_is_refused_by_name() {
    let message = act(&request(tree("right", json!({"sfc": "head"}))))
        .unwrap_err()
        .message;
    assert!(
        message.contains("no client selector at the right end"),
        "{message}"
    );
    assert!(message.contains("sfc=head"), "{message}");
    let mut elsewhere = tree("left", json!({"sfc": "head"}));
    elsewhere["all"][0]["spec"]["deploymentIntentGroup"] = json!("other-dig");
    let message = act(&request(elsewhere)).unwrap_err().message;
    assert!(
        message.contains("other-dig has no sfc intents"),
        "{message}"
    );
}
