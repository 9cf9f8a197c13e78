use super::*;
use crate::cni::go_equal_fold;
use bindings::exports::wasmco::controller::action::ClusterResources;
use bindings::wasmco::controller::types::AppPlacement;
use serde_json::{Value, json};
use wasmco_guest::testing::{FlatRequest, TestCluster};

/// What EMCO writes as the networks annotation of a workload without one.
const OVN_ONLY: &str = r#"[{"name":"ovn-networkobj","namespace":"default","cni-args":null}]"#;

/// An app of a test request: its clusters (indices) and base manifests.
struct App {
    name: &'static str,
    placed: Vec<u32>,
    base: Vec<Value>,
    /// Clusters with a resource list of their own.
    differing: Vec<(u32, Vec<Value>)>,
}

fn app(name: &'static str, placed: &[u32], base: Vec<Value>) -> App {
    App {
        name,
        placed: placed.to_vec(),
        base,
        differing: Vec::new(),
    }
}

fn resource(manifest: &Value) -> Resource {
    Resource {
        api_version: manifest["apiVersion"].as_str().unwrap().to_owned(),
        kind: manifest["kind"].as_str().unwrap().to_owned(),
        name: manifest["metadata"]["name"].as_str().unwrap().to_owned(),
        namespace: manifest["metadata"]["namespace"]
            .as_str()
            .map(str::to_owned),
        manifest: manifest.to_string(),
    }
}

fn request(tree: &Value, clusters: &[TestCluster<'_>], apps: &[App]) -> ActionRequest {
    let names: Vec<&str> = apps.iter().map(|a| a.name).collect();
    let flat = FlatRequest::new(clusters, &names);
    ActionRequest {
        intent: tree.to_string(),
        apps: names.iter().map(|n| flat.id(n)).collect(),
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        placements: apps
            .iter()
            .map(|a| AppPlacement {
                app: flat.id(a.name),
                clusters: a.placed.to_vec(),
                groups: Vec::new(),
            })
            .collect(),
        resources: apps
            .iter()
            .map(|a| AppResources {
                app: flat.id(a.name),
                base: a.base.iter().map(resource).collect(),
                differing: a
                    .differing
                    .iter()
                    .map(|(cluster, list)| ClusterResources {
                        cluster: *cluster,
                        resources: list.iter().map(resource).collect(),
                    })
                    .collect(),
            })
            .collect(),
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

fn cluster<'a>(name: &'a str, kv: &'a [(&'a str, &'a str)]) -> TestCluster<'a> {
    TestCluster {
        provider: "vfw-cluster-provider",
        name,
        labels: &["LabelA"],
        kv,
    }
}

/// An intent tree of one network controller intent, from EMCO documents
/// (`{"metadata", "spec"}`): workload intents with their interfaces.
fn tree(name: &str, workloads: &[(Value, Vec<Value>)]) -> Value {
    let workloads: Vec<Value> = workloads
        .iter()
        .map(|(workload, interfaces)| {
            let interfaces: Vec<Value> = interfaces
                .iter()
                .map(|i| json!({"kind": "interface intent", "metadata": i["metadata"], "spec": i["spec"]}))
                .collect();
            json!({"kind": "workload intent", "metadata": workload["metadata"], "spec": workload["spec"],
                   "children": {"interfaces": interfaces}})
        })
        .collect();
    json!({"name": name,
           "deploymentIntentGroup": {"project": "testvfw", "compositeApp": "compositevfw",
               "compositeAppVersion": "v1", "name": "vfw_deployment_intent_group",
               "logicalCloud": "default", "namespace": "default"},
           "intents": [{"kind": "network controller intent", "metadata": {"name": name}, "spec": {},
                        "children": {"workload-intents": workloads}}]})
}

fn workload_intent(name: &str, app: &str, resource: &str, kind: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"app": app, "workloadResource": resource, "type": kind}})
}

fn interface_intent(name: &str, interface: &str, network: &str, ip: &str) -> Value {
    json!({"metadata": {"name": name},
           "spec": {"interface": interface, "name": network, "defaultGateway": "false", "ipAddress": ip}})
}

/// The vfw network intents of EMCO's `examples/single-cluster/test-vfw-deployment.yaml`
/// (and `examples/vfw/test-vfw.yaml`), each workload's interfaces in name order.
fn vfw_tree() -> Value {
    tree(
        "vfw_ovnaction_intent",
        &[
            (
                workload_intent(
                    "packetgen_workload_intent",
                    "packetgen",
                    "r1-packetgen",
                    "Deployment",
                ),
                vec![
                    interface_intent(
                        "packetgen_emco_if",
                        "eth2",
                        "emco-private-net",
                        "10.10.20.2",
                    ),
                    interface_intent(
                        "packetgen_unprotected_if",
                        "eth1",
                        "unprotected-private-net",
                        "192.168.10.2",
                    ),
                ],
            ),
            (
                workload_intent(
                    "firewall_workload_intent",
                    "firewall",
                    "r1-firewall",
                    "Deployment",
                ),
                vec![
                    interface_intent("firewall_emco_if", "eth3", "emco-private-net", "10.10.20.3"),
                    interface_intent(
                        "firewall_protected_if",
                        "eth2",
                        "protected-private-net",
                        "192.168.20.2",
                    ),
                    interface_intent(
                        "firewall_unprotected_if",
                        "eth1",
                        "unprotected-private-net",
                        "192.168.10.3",
                    ),
                ],
            ),
            (
                workload_intent("sink_workload_intent", "sink", "r1-sink", "Deployment"),
                vec![
                    interface_intent("sink_emco_if", "eth2", "emco-private-net", "10.10.20.4"),
                    interface_intent(
                        "sink_protected_if",
                        "eth1",
                        "protected-private-net",
                        "192.168.20.3",
                    ),
                ],
            ),
        ],
    )
}

/// A Deployment as the vfw charts render it (release `r1`).
fn chart_deployment(app: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": format!("r1-{app}"), "labels": {"release": "r1", "app": app, "chart": app}},
           "spec": {"replicas": 1,
                    "selector": {"matchLabels": {"app": app, "release": "r1"}},
                    "template": {"metadata": {"labels": {"app": app, "release": "r1"}},
                                 "spec": {"containers": [{"name": app, "image": "ubuntu:18.04",
                                                          "tty": true, "stdin": true}]}}}})
}

fn vfw_apps(placed: &[u32]) -> Vec<App> {
    ["packetgen", "firewall", "sink"]
        .into_iter()
        .map(|name| {
            let service = json!({"apiVersion": "v1", "kind": "Service",
                                 "metadata": {"name": format!("{name}-service")}, "spec": {"ports": [{"port": 667}]}});
            app(name, placed, vec![chart_deployment(name), service])
        })
        .collect()
}

/// RFC 7386, as the host applies a merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let object = target.as_object_mut().unwrap();
    for (key, value) in patch {
        if value.is_null() {
            object.remove(key);
        } else {
            merge(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

fn patch_of(edit: &ActionEdit) -> (&PatchResource, Value) {
    match edit {
        ActionEdit::Patch(patch) => match &patch.patch {
            Patch::MergePatch(text) => (patch, serde_json::from_str(text).unwrap()),
            other => panic!("not a merge patch: {other:?}"),
        },
        other => panic!("not a patch: {other:?}"),
    }
}

/// `manifest` after the edits that target it (any scope).
fn patched(mut manifest: Value, edits: &[ActionEdit]) -> Value {
    for edit in edits {
        let (patch, body) = patch_of(edit);
        if patch.target.kind == manifest["kind"]
            && patch.target.name == manifest["metadata"]["name"]
        {
            merge(&mut manifest, &body);
        }
    }
    manifest
}

fn template_annotations(manifest: &Value) -> &Value {
    &manifest["spec"]["template"]["metadata"]["annotations"]
}

#[test]
fn vfw_deployments_get_the_annotations_emco_writes() {
    let clusters = [cluster(
        "edge01",
        &[("CNI-Networking-Multi-VM-CNI-Wrapper", "Multus")],
    )];
    let apps = vfw_apps(&[0]);
    let edits = act(&request(&vfw_tree(), &clusters, &apps)).unwrap();
    assert_eq!(edits.len(), 3, "{edits:?}");
    for edit in &edits {
        let (patch, _) = patch_of(edit);
        assert!(matches!(patch.scope, ClusterScope::All), "{patch:?}");
        assert_eq!(patch.target.kind, "Deployment");
    }

    let packetgen = patched(chart_deployment("packetgen"), &edits);
    assert_eq!(
        template_annotations(&packetgen)[NFN_ANNOTATION],
        r#"{"type":"ovn4nfv","interface":[{"interface":"eth2","name":"emco-private-net","defaultGateway":"false","ipAddress":"10.10.20.2"},{"interface":"eth1","name":"unprotected-private-net","defaultGateway":"false","ipAddress":"192.168.10.2"}]}"#
    );
    let firewall = patched(chart_deployment("firewall"), &edits);
    assert_eq!(
        template_annotations(&firewall)[NFN_ANNOTATION],
        r#"{"type":"ovn4nfv","interface":[{"interface":"eth3","name":"emco-private-net","defaultGateway":"false","ipAddress":"10.10.20.3"},{"interface":"eth2","name":"protected-private-net","defaultGateway":"false","ipAddress":"192.168.20.2"},{"interface":"eth1","name":"unprotected-private-net","defaultGateway":"false","ipAddress":"192.168.10.3"}]}"#
    );
    // Byte for byte what EMCO's ovnaction wrote on the sink pods of the vFW
    // (the status example of EMCO's docs/user/Emco_Status_Queries.md).
    let sink = patched(chart_deployment("sink"), &edits);
    assert_eq!(
        template_annotations(&sink)[NFN_ANNOTATION],
        r#"{"type":"ovn4nfv","interface":[{"interface":"eth2","name":"emco-private-net","defaultGateway":"false","ipAddress":"10.10.20.4"},{"interface":"eth1","name":"protected-private-net","defaultGateway":"false","ipAddress":"192.168.20.3"}]}"#
    );
    for deployment in [&packetgen, &firewall, &sink] {
        assert_eq!(
            template_annotations(deployment)[NETWORKS_ANNOTATION],
            OVN_ONLY
        );
        assert_eq!(
            template_annotations(deployment).as_object().unwrap().len(),
            2
        );
        // The rest of the template is left alone.
        assert_eq!(
            deployment["spec"]["template"]["metadata"]["labels"]["release"],
            "r1"
        );
        assert_eq!(deployment["spec"]["replicas"], 1);
    }
}

#[test]
fn emco_resources_test_deployment_keeps_its_annotations_and_networks() {
    // The Deployment of EMCO's ovnaction resources_test.go.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "mock-deployment"},
        "spec": {"template": {"metadata": {
            "annotations": {"abc": "abc123",
                            "k8s.v1.cni.cncf.io/networks": "ns1/net1@if1, ns2/net2@if2, net3, net4@if4",
                            "junk": "blahblahblah"},
            "labels": {"app": "sise"}},
            "spec": {"containers": [{"name": "sise", "image": "mhausenblas/simpleservice:0.5.0"}]}}}});
    let tree = tree(
        "nci",
        &[(
            workload_intent("wi", "sise", "mock-deployment", "Deployment"),
            vec![json!({"metadata": {"name": "theThirdName"},
                        "spec": {"interface": "name1", "name": "network_name"}})],
        )],
    );
    let edits = act(&request(
        &tree,
        &[cluster("c1", &[])],
        &[app("sise", &[0], vec![deployment.clone()])],
    ))
    .unwrap();
    let after = patched(deployment, &edits);
    let annotations = template_annotations(&after);
    assert_eq!(annotations["abc"], "abc123");
    assert_eq!(annotations["junk"], "blahblahblah");
    assert_eq!(
        annotations[NETWORKS_ANNOTATION],
        concat!(
            r#"[{"name":"net1","namespace":"ns1","interface":"if1","cni-args":null},"#,
            r#"{"name":"net2","namespace":"ns2","interface":"if2","cni-args":null},"#,
            r#"{"name":"net3","cni-args":null},{"name":"net4","interface":"if4","cni-args":null},"#,
            r#"{"name":"ovn-networkobj","namespace":"default","cni-args":null}]"#
        )
    );
    // An interface intent without a gateway is stored with "false".
    assert_eq!(
        annotations[NFN_ANNOTATION],
        r#"{"type":"ovn4nfv","interface":[{"interface":"name1","name":"network_name","defaultGateway":"false"}]}"#
    );
}

fn single_workload(manifest: &Value, interfaces: Vec<Value>) -> (Value, App) {
    let kind = manifest["kind"].as_str().unwrap();
    let name = manifest["metadata"]["name"].as_str().unwrap();
    let tree = tree(
        "nci",
        &[(workload_intent("wi", "web", name, kind), interfaces)],
    );
    (tree, app("web", &[0], vec![manifest.clone()]))
}

fn eth1() -> Value {
    interface_intent("if1", "eth1", "net-a", "10.0.0.5")
}

#[test]
fn existing_nfn_interfaces_are_updated_and_new_ones_appended() {
    let mut deployment = chart_deployment("web");
    deployment["spec"]["template"]["metadata"]["annotations"] = json!({NFN_ANNOTATION:
        r#"{"type":"other","interface":[{"interface":"eth3","name":"network3","defaultGateway":"true","ipAddress":"1.1.1.1","extra":1},{"Interface":"eth1","NAME":"net-a","macAddress":"00:11:22:33:44:55"}]}"#});
    let (tree, app) = single_workload(
        &deployment,
        vec![
            json!({"metadata": {"name": "a"}, "spec": {"interface": "eth3", "name": "network3"}}),
            eth1(),
        ],
    );
    let edits = act(&request(&tree, &[cluster("c1", &[])], &[app])).unwrap();
    let after = patched(deployment, &edits);
    // eth3 takes the intent's gateway and loses its address; eth1 (matched
    // case-insensitively, as Go does) takes the intent's address and MAC.
    assert_eq!(
        template_annotations(&after)[NFN_ANNOTATION],
        concat!(
            r#"{"type":"ovn4nfv","interface":[{"interface":"eth3","name":"network3","defaultGateway":"false"},"#,
            r#"{"interface":"eth1","name":"net-a","defaultGateway":"false","ipAddress":"10.0.0.5"}]}"#
        )
    );
}

#[test]
fn networks_in_json_are_rewritten_as_go_marshals_them() {
    let mut deployment = chart_deployment("web");
    deployment["spec"]["template"]["metadata"]["annotations"] = json!({NETWORKS_ANNOTATION:
        r#"[{"name":"n1","deviceID":"dropped","cni-args":{"b":1.0,"a":"<x&y>","c":1e21,"d":0.0000001},
             "ips":["10.0.0.1"],"default-route":["::ffff:10.0.0.1","fe80:0:0:0:0:0:0:1"],
             "bandwidth":{"ingressRate":1},"portMappings":[{"hostPort":80,"containerPort":8080,"protocol":"tcp"},null]},
            {"Name":"n2","Namespace":"other"}]"#});
    let (tree, app) = single_workload(&deployment, vec![eth1()]);
    let edits = act(&request(&tree, &[cluster("c1", &[])], &[app])).unwrap();
    let after = patched(deployment, &edits);
    assert_eq!(
        template_annotations(&after)[NETWORKS_ANNOTATION],
        concat!(
            r#"[{"name":"n1","ips":["10.0.0.1"],"#,
            r#""portMappings":[{"hostPort":80,"containerPort":8080,"protocol":"tcp"},null],"#,
            r#""bandwidth":{"ingressRate":1,"ingressBurst":0,"egressRate":0,"egressBurst":0},"#,
            r#""cni-args":{"a":"\u003cx\u0026y\u003e","b":1,"c":1e+21,"d":1e-7},"#,
            r#""default-route":["10.0.0.1","fe80::1"]},"#,
            r#"{"name":"n2","namespace":"other","cni-args":null},"#,
            r#"{"name":"ovn-networkobj","namespace":"default","cni-args":null}]"#
        )
    );
}

#[test]
fn an_ovn_network_already_listed_is_not_added_again() {
    let mut deployment = chart_deployment("web");
    deployment["spec"]["template"]["metadata"]["annotations"] =
        json!({NETWORKS_ANNOTATION: r#"[{ "name": "ovn-networkobj"}]"#});
    let (tree, app) = single_workload(&deployment, vec![eth1()]);
    let after = patched(
        deployment,
        &act(&request(&tree, &[cluster("c1", &[])], &[app])).unwrap(),
    );
    assert_eq!(
        template_annotations(&after)[NETWORKS_ANNOTATION],
        r#"[{"name":"ovn-networkobj","cni-args":null}]"#
    );
}

#[test]
fn an_unreadable_networks_annotation_of_a_built_in_kind_is_replaced() {
    let mut deployment = chart_deployment("web");
    deployment["spec"]["template"]["metadata"]["annotations"] =
        json!({NETWORKS_ANNOTATION: "a/b/c", NFN_ANNOTATION: "{not json"});
    let (tree, app) = single_workload(&deployment, vec![eth1()]);
    let after = patched(
        deployment,
        &act(&request(&tree, &[cluster("c1", &[])], &[app])).unwrap(),
    );
    assert_eq!(template_annotations(&after)[NETWORKS_ANNOTATION], OVN_ONLY);
    assert_eq!(
        template_annotations(&after)[NFN_ANNOTATION],
        r#"{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"net-a","defaultGateway":"false","ipAddress":"10.0.0.5"}]}"#
    );
}

#[test]
fn cluster_kv_pairs_decide_the_multus_annotation() {
    let kvs: [&[(&str, &str)]; 5] = [
        &[],
        &[(NODUS_FOR_ALL_INTERFACES, "true")],
        &[(MULTI_CNI_WRAPPER, "Genie")],
        &[
            (MULTI_CNI_WRAPPER, "MULTUS"),
            (NODUS_FOR_ALL_INTERFACES, "no"),
        ],
        &[(NODUS_FOR_ALL_INTERFACES, "T")],
    ];
    let clusters: Vec<TestCluster<'_>> = ["c0", "c1", "c2", "c3", "c4"]
        .iter()
        .zip(kvs)
        .map(|(name, kv)| cluster(name, kv))
        .collect();
    let deployment = chart_deployment("web");
    let (tree, mut web) = single_workload(&deployment, vec![eth1()]);
    web.placed = vec![0, 1, 2, 3, 4];
    let edits = act(&request(&tree, &clusters, &[web])).unwrap();
    assert_eq!(edits.len(), 2, "{edits:?}");
    let (with_multus, body) = patch_of(&edits[0]);
    assert!(
        matches!(&with_multus.scope, ClusterScope::Only(c) if c == &[0, 3]),
        "{with_multus:?}"
    );
    assert_eq!(
        body["spec"]["template"]["metadata"]["annotations"][NETWORKS_ANNOTATION],
        OVN_ONLY
    );
    let (without, body) = patch_of(&edits[1]);
    assert!(
        matches!(&without.scope, ClusterScope::Only(c) if c == &[1, 2, 4]),
        "{without:?}"
    );
    let annotations = body["spec"]["template"]["metadata"]["annotations"]
        .as_object()
        .unwrap();
    assert!(annotations.contains_key(NFN_ANNOTATION));
    assert!(!annotations.contains_key(NETWORKS_ANNOTATION));
}

#[test]
fn clusters_with_their_own_copy_get_their_own_patch() {
    let base = chart_deployment("web");
    let mut own = base.clone();
    own["spec"]["template"]["metadata"]["annotations"] = json!({NETWORKS_ANNOTATION: "net9"});
    let (tree, mut web) = single_workload(&base, vec![eth1()]);
    web.placed = vec![0, 1, 2, 3];
    // Cluster 1 has its own Deployment, cluster 2 none at all.
    web.differing = vec![(1, vec![own.clone()]), (2, vec![])];
    let clusters = [
        cluster("c0", &[]),
        cluster("c1", &[]),
        cluster("c2", &[]),
        cluster("c3", &[]),
    ];
    let edits = act(&request(&tree, &clusters, &[web])).unwrap();
    assert_eq!(edits.len(), 2, "{edits:?}");
    let (shared, _) = patch_of(&edits[0]);
    assert!(
        matches!(&shared.scope, ClusterScope::Only(c) if c == &[0, 3]),
        "{shared:?}"
    );
    let (alone, body) = patch_of(&edits[1]);
    assert!(
        matches!(&alone.scope, ClusterScope::Only(c) if c == &[1]),
        "{alone:?}"
    );
    assert_eq!(
        body["spec"]["template"]["metadata"]["annotations"][NETWORKS_ANNOTATION],
        r#"[{"name":"net9","cni-args":null},{"name":"ovn-networkobj","namespace":"default","cni-args":null}]"#
    );
}

#[test]
fn a_later_workload_intent_on_the_same_resource_builds_on_the_earlier() {
    let deployment = chart_deployment("web");
    let tree = tree(
        "nci",
        &[
            (
                workload_intent("first", "web", "r1-web", "Deployment"),
                vec![eth1()],
            ),
            (
                workload_intent("second", "web", "r1-web", "Deployment"),
                vec![interface_intent("if2", "eth2", "net-b", "")],
            ),
        ],
    );
    let web = app("web", &[0, 1], vec![deployment.clone()]);
    let clusters = [
        cluster("c0", &[]),
        cluster("c1", &[(MULTI_CNI_WRAPPER, "none")]),
    ];
    let edits = act(&request(&tree, &clusters, &[web])).unwrap();
    assert_eq!(edits.len(), 4, "{edits:?}");
    // Each cluster's copy, as the host would patch it.
    for (cluster, networks) in [(0, Some(OVN_ONLY)), (1, None)] {
        let mut copy = deployment.clone();
        for edit in &edits {
            let (patch, body) = patch_of(edit);
            if let ClusterScope::Only(list) = &patch.scope
                && list.contains(&cluster)
            {
                merge(&mut copy, &body);
            }
        }
        let annotations = template_annotations(&copy);
        assert_eq!(
            annotations[NFN_ANNOTATION],
            concat!(
                r#"{"type":"ovn4nfv","interface":[{"interface":"eth1","name":"net-a","defaultGateway":"false","ipAddress":"10.0.0.5"},"#,
                r#"{"interface":"eth2","name":"net-b","defaultGateway":"false"}]}"#
            ),
            "cluster {cluster}"
        );
        assert_eq!(
            annotations[NETWORKS_ANNOTATION].as_str(),
            networks,
            "cluster {cluster}"
        );
    }
}

#[test]
fn pods_cronjobs_and_custom_kinds_are_annotated_where_their_pods_are() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "p", "namespace": "ns1", "annotations": {NETWORKS_ANNOTATION: "net1"}},
                     "spec": {"containers": []}});
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                      "spec": {"schedule": "* * * * *",
                               "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
    // The VirtualMachine of EMCO's resources_test (kubevirt), in namespace vms.
    let vm = json!({"apiVersion": "kubevirt.io/v1alpha3", "kind": "VirtualMachine",
                    "metadata": {"name": "vm", "namespace": "vms"},
                    "spec": {"running": false, "template": {"metadata": {
                        "annotations": {NETWORKS_ANNOTATION: "net1"}}, "spec": {"domain": {}}}}});
    let statefulset = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                             "spec": {"template": {"metadata": {"namespace": "tmpl",
                                 "annotations": {NETWORKS_ANNOTATION: "net1"}}}}});
    let cases = [
        (pod, "/metadata/annotations", "ns1"),
        (
            cron,
            "/spec/jobTemplate/spec/template/metadata/annotations",
            "",
        ),
        (vm, "/spec/template/metadata/annotations", "vms"),
        (statefulset, "/spec/template/metadata/annotations", "tmpl"),
    ];
    for (manifest, path, namespace) in cases {
        let (tree, app) = single_workload(&manifest, vec![eth1()]);
        let edits = act(&request(&tree, &[cluster("c1", &[])], &[app])).unwrap();
        let after = patched(manifest.clone(), &edits);
        let annotations = after.pointer(path).unwrap_or_else(|| panic!("{after}"));
        let net1 = if namespace.is_empty() {
            r#"{"name":"net1","cni-args":null},"#.to_owned()
        } else {
            format!(r#"{{"name":"net1","namespace":"{namespace}","cni-args":null}},"#)
        };
        let expected = if manifest["kind"] == "CronJob" {
            OVN_ONLY.to_owned()
        } else {
            format!("[{net1}{}", &OVN_ONLY[1..])
        };
        assert_eq!(
            annotations[NETWORKS_ANNOTATION],
            expected.as_str(),
            "{}",
            manifest["kind"]
        );
        assert!(
            annotations[NFN_ANNOTATION]
                .as_str()
                .unwrap()
                .contains("\"eth1\"")
        );
    }
}

#[test]
fn a_custom_kind_needs_a_template_and_readable_annotations() {
    let no_template = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}});
    let (tree, app) = single_workload(&no_template, vec![eth1()]);
    let message = act(&request(&tree, &[cluster("c1", &[])], &[app]))
        .unwrap_err()
        .message;
    assert!(
        message.contains("workload intent \"wi\" of network controller intent \"nci\""),
        "{message}"
    );
    assert!(message.contains("spec.template"), "{message}");

    let unreadable = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                            "spec": {"template": {"metadata": {"annotations": {NETWORKS_ANNOTATION: "Bad_Name"}}}}});
    let (tree, app) = single_workload(&unreadable, vec![eth1()]);
    let message = act(&request(&tree, &[cluster("c1", &[])], &[app]))
        .unwrap_err()
        .message;
    assert!(message.contains("\"Bad_Name\" cannot be read"), "{message}");
}

#[test]
fn a_built_in_kind_without_pods_is_refused() {
    let service =
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {}});
    let (tree, app) = single_workload(&service, vec![eth1()]);
    let message = act(&request(&tree, &[cluster("c1", &[])], &[app]))
        .unwrap_err()
        .message;
    assert!(
        message.contains("Service \"svc\" (v1) has no pods"),
        "{message}"
    );
}

#[test]
fn a_workload_resource_found_nowhere_is_an_error_naming_the_kind() {
    let tree = tree(
        "vfw_ovnaction_intent",
        &[(
            workload_intent("sink_workload_intent", "sink", "r1-sink", "deployment"),
            vec![eth1()],
        )],
    );
    let apps = vfw_apps(&[0]);
    let message = act(&request(&tree, &[cluster("c1", &[])], &apps))
        .unwrap_err()
        .message;
    assert!(
        message.contains("workload intent \"sink_workload_intent\""),
        "{message}"
    );
    assert!(
        message.contains("no deployment named \"r1-sink\""),
        "{message}"
    );
    assert!(
        message.contains("it has a Deployment of that name"),
        "{message}"
    );
}

#[test]
fn workload_intents_without_interfaces_or_clusters_change_nothing() {
    let deployment = chart_deployment("web");
    let (tree, web) = single_workload(&deployment, vec![]);
    assert!(
        act(&request(&tree, &[cluster("c1", &[])], &[web]))
            .unwrap()
            .is_empty()
    );

    let (tree, mut web) = single_workload(&deployment, vec![eth1()]);
    web.placed.clear();
    assert!(
        act(&request(&tree, &[cluster("c1", &[])], &[web]))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_missing_network_controller_intent_or_app_is_an_error() {
    let mut empty = vfw_tree();
    empty["intents"] = json!([]);
    let apps = vfw_apps(&[0]);
    let message = act(&request(&empty, &[cluster("c1", &[])], &apps))
        .unwrap_err()
        .message;
    assert!(
        message.contains("network controller intent \"vfw_ovnaction_intent\" not found"),
        "{message}"
    );

    let message = act(&request(&vfw_tree(), &[cluster("c1", &[])], &apps[..2]))
        .unwrap_err()
        .message;
    assert!(
        message.contains("app \"sink\" is not part of the composite app"),
        "{message}"
    );
}

#[test]
fn go_json_details() {
    let float = |value: f64| {
        let mut out = String::new();
        gojson::write_float(&mut out, value);
        out
    };
    assert_eq!(float(1.0), "1");
    assert_eq!(float(-0.5), "-0.5");
    assert_eq!(float(1e20), "100000000000000000000");
    assert_eq!(float(1e21), "1e+21");
    assert_eq!(float(1.5e-7), "1.5e-7");
    assert_eq!(float(0.000001), "0.000001");
    assert_eq!(float(1.2345e100), "1.2345e+100");
    let mut out = String::new();
    gojson::write_string(&mut out, "a\"b\\c\n\u{1}<>&\u{2028}é");
    assert_eq!(out, r#""a\"b\\c\n\u0001\u003c\u003e\u0026\u2028é""#);
    assert!(gojson::folds_to("NameSpace", "namespace"));
    assert!(gojson::folds_to("name\u{17f}pace", "namespace"));
    assert!(!gojson::folds_to("names", "name"));
    assert!(go_equal_fold("mULTUS", "multus"));
    assert!(!go_equal_fold("multus2", "multus"));
}

/// The declaration's schema of `segment`.
fn schema(segment: &str) -> jsonschema::Validator {
    let schema =
        wasmco_guest::testing::declared_schema(include_str!("../intents.json"), segment).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn schemas_accept_emco_example_bodies() {
    let tree = vfw_tree();
    let workloads = schema("workload-intents");
    let interfaces = schema("interfaces");
    for workload in tree["intents"][0]["children"]["workload-intents"]
        .as_array()
        .unwrap()
    {
        assert!(workloads.is_valid(&workload["spec"]), "{workload}");
        for interface in workload["children"]["interfaces"].as_array().unwrap() {
            assert!(interfaces.is_valid(&interface["spec"]), "{interface}");
        }
    }
    // The interface of EMCO's API docs, with a MAC address.
    let documented = json!({"interface": "eth1", "name": "protected-net", "defaultGateway": "false",
                            "ipAddress": "192.168.10.3", "macAddress": "00:11:22:33:44:55"});
    assert!(interfaces.is_valid(&documented));
    assert!(interfaces.is_valid(
        &json!({"interface": "eth1", "name": "n", "defaultGateway": "",
                                        "ipAddress": "", "macAddress": ""})
    ));
    assert!(schema("network-controller-intent").is_valid(&json!({})));
}

#[test]
fn schemas_refuse_what_emco_refuses() {
    let workloads = schema("workload-intents");
    for field in ["app", "workloadResource", "type"] {
        let mut spec = json!({"app": "sink", "workloadResource": "r1-sink", "type": "Deployment"});
        spec.as_object_mut().unwrap().remove(field);
        assert!(!workloads.is_valid(&spec), "{field} is required");
    }
    assert!(
        !workloads.is_valid(
            &json!({"app": "sink", "workloadResource": "r1-sink/x", "type": "Deployment"})
        )
    );

    let interfaces = schema("interfaces");
    let valid = json!({"interface": "eth1", "name": "net", "defaultGateway": "false", "ipAddress": "10.0.0.1"});
    for field in ["interface", "name"] {
        let mut spec = valid.clone();
        spec.as_object_mut().unwrap().remove(field);
        assert!(!interfaces.is_valid(&spec), "{field} is required");
        spec[field] = json!("x".repeat(64));
        assert!(!interfaces.is_valid(&spec), "{field} is a label value");
    }
    for (field, value) in [
        ("defaultGateway", json!(true)),
        ("defaultGateway", json!("no way")),
        ("ipAddress", json!("192.168.10.256")),
        ("ipAddress", json!("10.0.0.01")),
        ("ipAddress", json!("1::2::3")),
        ("ipAddress", json!("10.0.0.0/24")),
        ("macAddress", json!("00:11:22:33:44")),
        ("macAddress", json!("00:11-22:33:44:55")),
        ("macAddress", json!("0011.2233.44")),
    ] {
        let mut spec = valid.clone();
        spec[field] = value.clone();
        assert!(!interfaces.is_valid(&spec), "{field} {value}");
    }
    for (field, value) in [
        ("ipAddress", "fe80::1"),
        ("ipAddress", "::ffff:10.0.0.1"),
        ("ipAddress", "1:2:3:4:5:6:7::"),
        ("macAddress", "00-11-22-33-44-55"),
        ("macAddress", "0011.2233.4455"),
        (
            "macAddress",
            "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01",
        ),
        ("defaultGateway", "true"),
    ] {
        let mut spec = valid.clone();
        spec[field] = json!(value);
        assert!(interfaces.is_valid(&spec), "{field} {value}");
    }
}

/// The `ipAddress` pattern: empty, IPv4 without leading zeros, or IPv6
/// with at most one `::` standing for at least one group and an optional
/// trailing IPv4, which is what Go's `net.ParseIP` accepts.
fn ip_pattern() -> String {
    let group = "[0-9A-Fa-f]{1,4}";
    let octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    let v4 = format!(r"(?:{octet}\.){{3}}{octet}");
    let mut v6 = vec![
        format!("(?:{group}:){{7}}{group}"),
        format!("(?:{group}:){{6}}{v4}"),
    ];
    for left in 0..8 {
        let head = match left {
            0 => String::new(),
            1 => group.to_owned(),
            _ => format!("{group}(?::{group}){{{}}}", left - 1),
        };
        let tail = match 7 - left {
            0 => String::new(),
            1 => format!("(?:{group})?"),
            room => format!("(?:{group}(?::{group}){{0,{}}})?", room - 1),
        };
        v6.push(format!("{head}::{tail}"));
        if left <= 5 {
            let room = 5 - left;
            let tail = if room == 0 {
                v4.clone()
            } else {
                format!("(?:{group}:){{0,{room}}}{v4}")
            };
            v6.push(format!("{head}::{tail}"));
        }
    }
    format!("^(?:|{v4}|{})$", v6.join("|"))
}

#[test]
fn the_ip_pattern_is_the_documented_one_and_agrees_with_an_ip_parser() {
    let declaration: Value = serde_json::from_str(include_str!("../intents.json")).unwrap();
    let declared = &declaration["kinds"][2]["schema"]["properties"]["ipAddress"]["pattern"];
    assert_eq!(declared, &json!(ip_pattern()));
    let interfaces = schema("interfaces");
    let samples = [
        "1.2.3.4",
        "255.255.255.255",
        "0.0.0.0",
        "256.1.1.1",
        "1.2.3",
        "1.2.3.4.5",
        "01.2.3.4",
        "::",
        "::1",
        "1::",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7::",
        "1::8",
        ":1:2",
        "1:2:",
        "1:::2",
        "::ffff:1.2.3.4",
        "1:2:3:4:5:6:1.2.3.4",
        "1:2:3:4:5:6:7:1.2.3.4",
        "::1.2.3.4",
        "fe80::1%eth0",
        "12345::",
        "g::1",
        "a:b:c:d:e:f:a:b",
        "1::2:3:4:5:6:7",
        "1::2:3:4:5:6:7:8",
        "1:2:3:4:5::1.2.3.4",
        "1:2:3:4:5:6::1.2.3.4",
    ];
    for sample in samples {
        let parsed = sample.parse::<std::net::IpAddr>().is_ok();
        let spec = json!({"interface": "eth1", "name": "n", "ipAddress": sample});
        assert_eq!(interfaces.is_valid(&spec), parsed, "{sample}");
    }
}

#[test]
fn what_emco_logs_and_passes_over_is_noted() {
    let base = chart_deployment("web");
    let mut broken = base.clone();
    broken["spec"]["template"]["metadata"]["annotations"] = json!({NETWORKS_ANNOTATION: "a/b/c"});
    let (tree, mut web) = single_workload(&base, vec![eth1()]);
    web.placed = vec![0, 1, 2];
    web.differing = vec![(1, vec![]), (2, vec![broken])];
    let clusters = [cluster("c0", &[]), cluster("c1", &[]), cluster("c2", &[])];
    let request = request(&tree, &clusters, &[web]);
    let spec = WorkloadSpec {
        app: "web".into(),
        workload_resource: "r1-web".into(),
        kind: "Deployment".into(),
    };
    let parsed = IntentTree::parse(&tree.to_string()).unwrap();
    let interfaces = interfaces(&parsed.intents[0].children(WORKLOAD_INTENTS)[0]).unwrap();
    let mut notes = Vec::new();
    let edits = Workspace::new(&request)
        .annotate(&spec, &interfaces, &mut notes)
        .unwrap();
    // Cluster 2's unreadable networks are replaced, so it gets what cluster 0 gets.
    assert_eq!(edits.len(), 1, "{edits:?}");
    let (patch, _) = patch_of(&edits[0]);
    assert!(matches!(&patch.scope, ClusterScope::All), "{patch:?}");
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains(
            "Deployment \"r1-web\" (apps/v1): annotation k8s.v1.cni.cncf.io/networks \"a/b/c\" cannot be read"
        ),
        "{notes:?}"
    );
    assert!(
        notes[1].contains("no Deployment named \"r1-web\" on cluster vfw-cluster-provider+c1;"),
        "{notes:?}"
    );
}
