use super::*;
use serde_json::{Value, json};
use wasmco_guest::testing::{FlatRequest, TestCluster};

fn requirement(name: &str, spec: Value) -> Value {
    json!({"kind": "hpa resource requirement", "metadata": {"name": name}, "spec": spec})
}

fn consumer(name: &str, spec: Value, requirements: Vec<Value>) -> Value {
    json!({"kind": "hpa resource consumer", "metadata": {"name": name}, "spec": spec,
           "children": {"resource-requirements": requirements}})
}

fn intent(name: &str, app: &str, consumers: Vec<Value>) -> Value {
    json!({"kind": "hpa intent", "metadata": {"name": name}, "spec": {"app": app},
           "children": {"hpa-resource-consumers": consumers}})
}

/// EMCO's `examples/hpa/hpa-test-advanced.yaml` label requirement.
fn qat() -> Value {
    requirement(
        "hpa-placement-nonallocatable-resource-1",
        json!({"allocatable": false, "mandatory": true, "weight": 1,
               "resource": {"key": "feature.node.kubernetes.io/intel_qat", "value": "true"}}),
    )
}

/// EMCO's `examples/hpa/hpa-test-advanced.yaml` cpu requirement.
fn four_cores() -> Value {
    requirement(
        "hpa-placement-allocatable-resource-cpu-1",
        json!({"allocatable": true, "mandatory": true, "weight": 1,
               "resource": {"name": "cpu", "requests": 4, "limits": 4}}),
    )
}

/// The commented-out memory requirement of the same example (1000 MB).
fn memory_request_only() -> Value {
    requirement(
        "hpa-placement-allocatable-resource-memory-1",
        json!({"allocatable": true, "mandatory": true, "weight": 1,
               "resource": {"name": "memory", "requests": 1000}}),
    )
}

fn client_consumer(spec_extra: Value, requirements: Vec<Value>) -> Value {
    let mut spec = json!({"apiVersion": "v19", "kind": "Deployment", "name": "r1-http-client",
                          "container": "http-client"});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    consumer("hpa-placement-consumer-1", spec, requirements)
}

/// The tree the host sends; the name is EMCO's example's, which matches no
/// stored hpa intent.
fn tree(all: Vec<Value>) -> String {
    json!({"name": "hpa-action-intent", "intents": [], "all": all}).to_string()
}

/// `r1-http-client` as helm renders it: a log sidecar first, then the
/// `http-client` container with an ephemeral-storage limit of its own.
fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "r1-http-client", "labels": {"app": "http-client"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "http-client"}},
            "template": {
                "metadata": {"labels": {"app": "http-client"}},
                "spec": {"containers": [
                    {"name": "log-shipper", "image": "busybox"},
                    {"name": "http-client", "image": "emco/http-client:latest",
                     "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
                ]}
            }
        }
    })
}

fn resource(manifest: &Value) -> Resource {
    Resource {
        api_version: manifest["apiVersion"].as_str().unwrap_or_default().into(),
        kind: manifest["kind"].as_str().unwrap_or_default().into(),
        name: manifest["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .into(),
        namespace: None,
        manifest: manifest.to_string(),
    }
}

/// `http-client` placed on provider1's `edge1` and `edge2` with `base`;
/// `differing` gives some clusters their own resources.
fn request(intent: String, base: Vec<Value>, differing: Vec<(u32, Vec<Value>)>) -> ActionRequest {
    let cluster = |name| TestCluster {
        provider: "provider1",
        name,
        labels: &[],
        kv: &[],
    };
    let flat = FlatRequest::new(
        &[cluster("edge1"), cluster("edge2")],
        &["http-client", "http-server"],
    );
    let app = flat.id("http-client");
    ActionRequest {
        intent,
        apps: vec![app, flat.id("http-server")],
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        placements: vec![AppPlacement {
            app,
            clusters: vec![0, 1],
            groups: Vec::new(),
        }],
        resources: vec![AppResources {
            app,
            base: base.iter().map(resource).collect(),
            differing: differing
                .into_iter()
                .map(|(cluster, resources)| ClusterResources {
                    cluster,
                    resources: resources.iter().map(resource).collect(),
                })
                .collect(),
        }],
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

/// The only edit, checked to target `r1-http-client`: its scope and the
/// Deployment it makes of `manifest`.
fn patched(edit: &ActionEdit, manifest: &Value) -> (ClusterScope, Value) {
    let ActionEdit::Patch(PatchResource {
        app,
        scope,
        target,
        patch: Patch::JsonPatch(patch),
    }) = edit
    else {
        panic!("unexpected edit {edit:?}");
    };
    assert_eq!(app, "http-client");
    assert_eq!(
        (target.kind.as_str(), target.name.as_str()),
        ("Deployment", "r1-http-client")
    );
    let patch: json_patch::Patch = serde_json::from_str(patch).unwrap();
    let mut result = manifest.clone();
    json_patch::patch(&mut result, &patch).unwrap();
    (scope.clone(), result)
}

#[test]
fn advanced_example_sets_the_node_selector_and_the_containers_cpu() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({}), vec![qat(), four_cores()])],
    )];
    let edits = act(&request(tree(all), vec![deployment()], vec![])).unwrap();
    let [edit] = &edits[..] else {
        panic!("expected one edit, got {edits:?}");
    };
    let (scope, result) = patched(edit, &deployment());
    assert!(matches!(scope, ClusterScope::All), "{scope:?}");
    let pod = &result["spec"]["template"]["spec"];
    assert_eq!(
        pod["nodeSelector"],
        json!({"feature.node.kubernetes.io/intel_qat": "true"})
    );
    assert_eq!(
        pod["containers"][1]["resources"],
        json!({"requests": {"cpu": "4"}, "limits": {"cpu": "4", "ephemeral-storage": "1Gi"}})
    );
    assert_eq!(
        pod["containers"][0],
        deployment()["spec"]["template"]["spec"]["containers"][0]
    );
    // The consumer sets no replicas.
    assert_eq!(result["spec"]["replicas"], 1);
}

#[test]
fn example_replicas_replace_the_deployments() {
    // examples/hpa/hpa-example.yaml: replicas 2, 1 core.
    let cpu = requirement(
        "hpa-placement-allocatable-resource-1",
        json!({"allocatable": true, "mandatory": true, "weight": 1,
               "resource": {"name": "cpu", "requests": 1, "limits": 1}}),
    );
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({"replicas": 2}), vec![cpu])],
    )];
    let edits = act(&request(tree(all.clone()), vec![deployment()], vec![])).unwrap();
    let (_, result) = patched(&edits[0], &deployment());
    assert_eq!(result["spec"]["replicas"], 2);

    // A Deployment that leaves replicas to its default keeps doing so.
    let mut unset = deployment();
    unset["spec"].as_object_mut().unwrap().remove("replicas");
    let edits = act(&request(tree(all), vec![unset.clone()], vec![])).unwrap();
    let (_, result) = patched(&edits[0], &unset);
    assert_eq!(result["spec"].get("replicas"), None);
    assert_eq!(
        result["spec"]["template"]["spec"]["containers"][1]["resources"]["requests"],
        json!({"cpu": "1"})
    );
}

#[test]
fn memory_megabytes_become_bytes_and_no_limit_is_added_without_one() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({}), vec![memory_request_only()])],
    )];
    let edits = act(&request(tree(all), vec![deployment()], vec![])).unwrap();
    let (_, result) = patched(&edits[0], &deployment());
    assert_eq!(
        result["spec"]["template"]["spec"]["containers"][1]["resources"],
        json!({"requests": {"memory": "1000000000"}, "limits": {"ephemeral-storage": "1Gi"}})
    );
}

#[test]
fn requirements_of_several_intents_on_one_deployment_make_one_patch() {
    let label = |key: &str| {
        requirement(
            key,
            json!({"allocatable": "false", "resource": {"key": key, "value": "true"}}),
        )
    };
    let all = vec![
        intent(
            "hpa-1",
            "http-client",
            vec![client_consumer(
                json!({}),
                vec![label("feature.node.kubernetes.io/intel_qat")],
            )],
        ),
        intent(
            "hpa-2",
            "http-client",
            vec![client_consumer(
                json!({}),
                vec![label("feature.node.kubernetes.io/hugepages")],
            )],
        ),
        intent("hpa-3", "http-server", vec![]),
    ];
    let mut selected = deployment();
    selected["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
    let edits = act(&request(tree(all), vec![selected.clone()], vec![])).unwrap();
    let [edit] = &edits[..] else {
        panic!("expected one edit, got {edits:?}");
    };
    let (_, result) = patched(edit, &selected);
    assert_eq!(
        result["spec"]["template"]["spec"]["nodeSelector"],
        json!({"zone": "a", "feature.node.kubernetes.io/intel_qat": "true",
               "feature.node.kubernetes.io/hugepages": "true"})
    );
}

#[test]
fn clusters_with_their_own_deployment_get_their_own_patch() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({}), vec![four_cores()])],
    )];
    // edge2's Deployment has the containers the other way round.
    let mut swapped = deployment();
    swapped["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let edits = act(&request(
        tree(all.clone()),
        vec![deployment()],
        vec![(1, vec![swapped.clone()])],
    ))
    .unwrap();
    assert_eq!(edits.len(), 2, "{edits:?}");
    for (cluster, manifest, index) in [(0, deployment(), 1), (1, swapped, 0)] {
        let edit = edits
            .iter()
            .find(|edit| {
                matches!(edit, ActionEdit::Patch(PatchResource {
                    scope: ClusterScope::Only(on), ..
                }) if on == &[cluster])
            })
            .unwrap_or_else(|| panic!("no edit for cluster {cluster}: {edits:?}"));
        let (_, result) = patched(edit, &manifest);
        let container = &result["spec"]["template"]["spec"]["containers"][index];
        assert_eq!(container["name"], "http-client");
        assert_eq!(container["resources"]["requests"]["cpu"], "4");
    }

    // A cluster whose resources differ elsewhere but whose Deployment is
    // the same shares the edit, which then covers every cluster.
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra"}});
    let edits = act(&request(
        tree(all),
        vec![deployment()],
        vec![(1, vec![deployment(), config])],
    ))
    .unwrap();
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert!(matches!(
        patched(&edits[0], &deployment()).0,
        ClusterScope::All
    ));
}

#[test]
fn a_patch_for_another_container_order_fails_its_test() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({}), vec![four_cores()])],
    )];
    let edits = act(&request(tree(all), vec![deployment()], vec![])).unwrap();
    let ActionEdit::Patch(PatchResource {
        patch: Patch::JsonPatch(patch),
        ..
    }) = &edits[0]
    else {
        panic!("unexpected edit {:?}", edits[0]);
    };
    let patch: json_patch::Patch = serde_json::from_str(patch).unwrap();
    let mut swapped = deployment();
    swapped["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert!(json_patch::patch(&mut swapped, &patch).is_err());
}

#[test]
fn a_missing_deployment_is_an_error_naming_intent_consumer_and_cluster() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({}), vec![qat()])],
    )];
    let config =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r1-http-client"}});
    let err = act(&request(tree(all), vec![config], vec![])).unwrap_err();
    assert_eq!(
        err.message,
        "hpa-intent hpa-placement-intent-1, hpa-resource-consumer hpa-placement-consumer-1, \
         resource-requirement hpa-placement-nonallocatable-resource-1: app http-client on \
         cluster provider1+edge1: it has no Deployment r1-http-client"
    );
}

#[test]
fn a_deployment_named_otherwise_inside_is_an_error() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({}), vec![qat()])],
    )];
    let mut renamed = deployment();
    renamed["metadata"]["name"] = json!("r2-http-client");
    let mut listed = resource(&renamed);
    listed.name = "r1-http-client".into();
    let mut req = request(tree(all), vec![], vec![]);
    req.resources[0].base = vec![listed];
    let err = act(&req).unwrap_err();
    assert!(
        err.message.ends_with(
            "its metadata.name \"r2-http-client\" does not match the consumer's spec.name \"r1-http-client\""
        ),
        "{}",
        err.message
    );
}

#[test]
fn a_missing_container_is_an_error_listing_the_pods_containers() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![consumer(
            "hpa-placement-consumer-1",
            json!({"name": "r1-http-client", "container": "http-client-v2"}),
            vec![four_cores()],
        )],
    )];
    let err = act(&request(tree(all), vec![deployment()], vec![])).unwrap_err();
    assert!(
        err.message.starts_with(
            "hpa-intent hpa-placement-intent-1, hpa-resource-consumer hpa-placement-consumer-1, \
             resource-requirement hpa-placement-allocatable-resource-cpu-1: Deployment \
             r1-http-client of app http-client on cluster provider1+edge1: it has no container \
             \"http-client-v2\""
        ) && err.message.ends_with("[\"log-shipper\", \"http-client\"]"),
        "{}",
        err.message
    );
}

#[test]
fn a_deployment_without_a_template_only_gets_its_replicas() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(json!({"replicas": 3}), vec![qat()])],
    )];
    let mut bare = deployment();
    bare["spec"].as_object_mut().unwrap().remove("template");
    let edits = act(&request(tree(all), vec![bare.clone()], vec![])).unwrap();
    let (_, result) = patched(&edits[0], &bare);
    let mut expected = bare;
    expected["spec"]["replicas"] = json!(3);
    assert_eq!(result, expected);
}

#[test]
fn apps_without_intents_placement_or_requirements_are_left_alone() {
    let all = vec![
        intent(
            "hpa-placement-intent-1",
            "http-client",
            vec![client_consumer(json!({"replicas": 5}), vec![])],
        ),
        // http-server is not placed.
        intent(
            "hpa-placement-intent-2",
            "http-server",
            vec![client_consumer(json!({}), vec![qat()])],
        ),
    ];
    assert!(
        act(&request(tree(all), vec![deployment()], vec![]))
            .unwrap()
            .is_empty()
    );
    assert!(
        act(&request(tree(vec![]), vec![], vec![]))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn intents_emco_would_refuse_to_store_fail_the_call() {
    let all = vec![intent(
        "hpa-placement-intent-1",
        "http-client",
        vec![client_consumer(
            json!({}),
            vec![requirement(
                "cpu",
                json!({"allocatable": true, "resource": {"name": "cpu", "requests": 3, "limits": 2}}),
            )],
        )],
    )];
    let err = act(&request(tree(all), vec![deployment()], vec![])).unwrap_err();
    assert!(
        err.message
            .ends_with("requests must be less or equal to limits for cpu"),
        "{}",
        err.message
    );
}
