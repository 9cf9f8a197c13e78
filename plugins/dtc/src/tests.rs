//! Bodies are EMCO's own: the nps unit test (`src/nps/internal/networkpolicy/
//! action_test.go`), `examples/dtc/network_policy/intents.yaml`,
//! `examples/single-cluster/test-dtc-deployment.yaml` (with the values its
//! `setup.sh` writes) and `examples/dtc/external_access/intents.yaml`.

use serde_json::{Value, json};

use super::*;
use bindings::wasmco::controller::types::AppPlacement;
use wasmco_guest::testing::{FlatRequest, TestCluster};

/// A cluster of provider `provider` called `name` with `labels`.
fn cluster<'a>(provider: &'a str, name: &'a str, labels: &'a [&'a str]) -> TestCluster<'a> {
    TestCluster {
        provider,
        name,
        labels,
        kv: &[],
    }
}

/// A request whose apps are placed as `placements` says (cluster indices).
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
        resources: Vec::new(),
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

/// The tree the host hands over when the deployment's `intents` document
/// says `dtc: <group>`, the group being the first of `groups`.
fn tree(namespace: &str, groups: Vec<Value>) -> Value {
    json!({
        "name": groups[0]["metadata"]["name"],
        "deploymentIntentGroup": {"project": "proj1", "compositeApp": "collection-composite-app",
            "compositeAppVersion": "v1", "name": "collection-deployment-intent-group",
            "logicalCloud": "default", "namespace": namespace},
        "intents": [groups[0]],
        "all": groups,
    })
}

fn group(name: &str, inbound: Vec<Value>) -> Value {
    json!({"kind": "traffic group intent",
           "metadata": {"name": name, "description": "description of traffic intent",
                        "userData1": "user data 1", "userData2": "user data 2"},
           "spec": {}, "children": {"inbound-intents": inbound}})
}

fn inbound(name: &str, spec: Value, clients: Vec<Value>) -> Value {
    json!({"kind": "inbound intent", "metadata": {"name": name}, "spec": spec,
           "children": {"clients": clients}})
}

fn client(name: &str, spec: Value) -> Value {
    json!({"kind": "inbound clients intent", "metadata": {"name": name}, "spec": spec})
}

/// The example's server intent `serverin`.
fn http_server() -> Value {
    json!({"app": "http-server", "appLabel": "app=http-server", "serviceName": "http-service",
           "port": 3333, "protocol": "TCP", "serviceMesh": "none"})
}

/// The example's client intent `client1`.
fn http_client() -> Value {
    client(
        "client1",
        json!({"app": "http-client", "appLabel": "app=http-client", "serviceName": "http-client",
               "namespaces": [], "cidrs": []}),
    )
}

/// The single added manifest, with its app and scope.
fn added(edits: &[ActionEdit]) -> (&str, &ClusterScope, Value) {
    match edits {
        [ActionEdit::Add(add)] => (
            add.app.as_str(),
            &add.scope,
            serde_json::from_str(&add.manifest).unwrap(),
        ),
        other => panic!("expected one added resource, got {other:?}"),
    }
}

#[test]
fn emco_nps_unit_test_yields_the_same_policy() {
    let tree = tree(
        "",
        vec![group(
            "testtgi",
            vec![inbound(
                "testisi",
                json!({"app": "server", "appLabel": "app=server", "serviceName": "server-svc",
                       "externalName": "", "port": 4443, "protocol": "TCP", "externalSupport": false}),
                vec![client(
                    "testici",
                    json!({"app": "client", "appLabel": "app=client", "serviceName": "client-svc",
                           "namespaces": [], "cidrs": []}),
                )],
            )],
        )],
    );
    let clusters = [
        cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL]),
        cluster("provider2", "cluster2", &[NETWORK_POLICY_LABEL]),
    ];
    let edits = act(&request(
        tree,
        &clusters,
        &[("server", &[0]), ("client", &[1])],
    ))
    .unwrap();
    let (app, scope, manifest) = added(&edits);
    assert_eq!(app, "server");
    assert!(matches!(scope, ClusterScope::All));
    // EMCO's expectedOut, as JSON.
    assert_eq!(
        manifest,
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "testtgi-testisi"},
               "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                        "policyTypes": ["Ingress"],
                        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "client"}}},
                                              {"ipBlock": {"cidr": "0.0.0.0/0"}}],
                                     "ports": [{"protocol": "TCP"}, {"port": 4443}]}]}})
    );
}

#[test]
fn network_policy_example_goes_only_to_labelled_server_clusters_in_the_cloud_namespace() {
    let tree = tree(
        "ns1",
        vec![group(
            "testdtc",
            vec![inbound("serverin", http_server(), vec![http_client()])],
        )],
    );
    let clusters = [
        cluster(
            "provider1",
            "cluster1",
            &["edge-cluster1", NETWORK_POLICY_LABEL],
        ),
        cluster("provider1", "cluster2", &["edge-cluster2"]),
    ];
    let edits = act(&request(
        tree,
        &clusters,
        &[("http-client", &[0]), ("http-server", &[0, 1])],
    ))
    .unwrap();
    let (app, scope, manifest) = added(&edits);
    assert_eq!(app, "http-server");
    assert!(matches!(scope, ClusterScope::Only(only) if only == &[0]));
    // What the example's `kubectl get networkpolicy` shows: testdtc-serverin, app=http-server.
    assert_eq!(
        manifest["metadata"],
        json!({"name": "testdtc-serverin", "namespace": "ns1"})
    );
    assert_eq!(
        manifest["spec"]["podSelector"],
        json!({"matchLabels": {"app": "http-server"}})
    );
    assert_eq!(
        manifest["spec"]["ingress"],
        json!([{"from": [{"podSelector": {"matchLabels": {"app": "http-client"}}},
                         {"ipBlock": {"cidr": "0.0.0.0/0"}}],
                "ports": [{"protocol": "TCP"}, {"port": 3333}]}])
    );
}

#[test]
fn single_cluster_dtc_test_adds_its_policy() {
    let tree = tree(
        "ns1",
        vec![group(
            "collectd-dtc-intent",
            vec![inbound(
                "serverin",
                json!({"app": "http-server", "appLabel": "app=http-server",
                       "serviceName": "http-service", "port": 3333, "protocol": "TCP"}),
                vec![client(
                    "client1",
                    json!({"app": "http-client", "appLabel": "app=http-client",
                           "serviceName": "http-client", "namespaces": [], "cidrs": []}),
                )],
            )],
        )],
    );
    let clusters = [cluster(
        "provider1",
        "cluster1",
        &["edge-cluster", NETWORK_POLICY_LABEL],
    )];
    let edits = act(&request(
        tree,
        &clusters,
        &[("http-client", &[0]), ("http-server", &[0])],
    ))
    .unwrap();
    let (app, scope, manifest) = added(&edits);
    assert_eq!(app, "http-server");
    assert!(matches!(scope, ClusterScope::All));
    assert_eq!(manifest["metadata"]["name"], "collectd-dtc-intent-serverin");
    assert_eq!(manifest["metadata"]["namespace"], "ns1");
}

#[test]
fn clusters_without_the_label_get_no_policy() {
    let tree = tree(
        "",
        vec![group(
            "testdtc",
            vec![inbound("serverin", http_server(), vec![http_client()])],
        )],
    );
    let clusters = [cluster("provider1", "cluster1", &["edge-cluster"])];
    let edits = act(&request(
        tree,
        &clusters,
        &[("http-client", &[0]), ("http-server", &[0])],
    ))
    .unwrap();
    assert!(edits.is_empty(), "{edits:?}");
}

#[test]
fn external_support_admits_the_clients_networks_instead_of_any_source() {
    // external_access's httpbin server, with the schema's example cidrs on its client.
    let server = json!({"app": "httpbin", "appLabel": "app=httpbin", "serviceName": "httpbin",
        "externalName": "httpbin.example.com", "port": 8000, "protocol": "TCP",
        "serviceMesh": "istio", "externalSupport": true,
        "management": {"sidecarProxy": "yes", "tlsType": "MUTUAL"},
        "external": {"externalCerts": {"serviceCertificate": "LS0t", "servicePrivateKey": "LS0t",
                                       "caCertificate": "LS0t"}}});
    let sleep = client(
        "sleep-client",
        json!({"app": "sleep", "appLabel": "app=sleep", "serviceName": "sleep",
               "namespaces": [], "cidrs": ["172.168.21.0/24", "10.20.20.0/16"]}),
    );
    let tree = tree(
        "",
        vec![group(
            "dtc-intent",
            vec![inbound("httpbin-server", server, vec![sleep])],
        )],
    );
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let edits = act(&request(
        tree,
        &clusters,
        &[("httpbin", &[0]), ("sleep", &[0])],
    ))
    .unwrap();
    let (_, _, manifest) = added(&edits);
    assert_eq!(
        manifest["spec"]["ingress"][0]["from"],
        json!([{"podSelector": {"matchLabels": {"app": "sleep"}}},
               {"ipBlock": {"cidr": "172.168.21.0/24"}},
               {"ipBlock": {"cidr": "10.20.20.0/16"}}])
    );
    assert_eq!(
        manifest["spec"]["ingress"][0]["ports"],
        json!([{"protocol": "TCP"}, {"port": 8000}])
    );
}

#[test]
fn external_support_written_as_a_string_counts() {
    let mut server = http_server();
    server["externalSupport"] = json!("true");
    let with_cidr = client(
        "client1",
        json!({"app": "http-client", "appLabel": "app=http-client", "serviceName": "http-client",
               "namespaces": [], "cidrs": ["10.0.0.0/8"]}),
    );
    let tree = tree(
        "",
        vec![group(
            "testdtc",
            vec![inbound("serverin", server, vec![with_cidr])],
        )],
    );
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let edits = act(&request(tree, &clusters, &[("http-server", &[0])])).unwrap();
    let (_, _, manifest) = added(&edits);
    assert_eq!(
        manifest["spec"]["ingress"][0]["from"][1],
        json!({"ipBlock": {"cidr": "10.0.0.0/8"}})
    );
    assert_eq!(
        manifest["spec"]["ingress"][0]["from"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn every_client_is_admitted_in_order_and_cidrs_are_ignored_without_external_support() {
    let second = client(
        "client2",
        json!({"app": "http-client", "appLabel": "tier=frontend", "serviceName": "http-client",
               "namespaces": ["np1"], "cidrs": ["10.0.0.0/8"]}),
    );
    let tree = tree(
        "",
        vec![group(
            "testdtc",
            vec![inbound(
                "serverin",
                http_server(),
                vec![http_client(), second],
            )],
        )],
    );
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let edits = act(&request(tree, &clusters, &[("http-server", &[0])])).unwrap();
    let (_, _, manifest) = added(&edits);
    assert_eq!(
        manifest["spec"]["ingress"][0]["from"],
        json!([{"podSelector": {"matchLabels": {"app": "http-client"}}},
               {"podSelector": {"matchLabels": {"tier": "frontend"}}},
               {"ipBlock": {"cidr": "0.0.0.0/0"}}])
    );
}

#[test]
fn one_policy_per_inbound_intent_with_clients() {
    let other_server = json!({"app": "db", "appLabel": "app=db", "serviceName": "db",
                              "port": 5432, "protocol": "TCP"});
    let tree = tree(
        "",
        vec![group(
            "testdtc",
            vec![
                inbound("serverin", http_server(), vec![http_client()]),
                inbound("lonely", other_server, vec![]),
            ],
        )],
    );
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let edits = act(&request(
        tree,
        &clusters,
        &[("http-server", &[0]), ("db", &[0])],
    ))
    .unwrap();
    let (app, _, manifest) = added(&edits);
    assert_eq!(app, "http-server");
    assert_eq!(manifest["metadata"]["name"], "testdtc-serverin");
}

#[test]
fn only_the_named_traffic_group_is_acted_on() {
    let named = group("testdtc", vec![]);
    let other = group(
        "other",
        vec![inbound("serverin", http_server(), vec![http_client()])],
    );
    let tree = tree("", vec![named, other]);
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let edits = act(&request(tree, &clusters, &[("http-server", &[0])])).unwrap();
    assert!(edits.is_empty(), "{edits:?}");
}

#[test]
fn a_server_label_without_a_value_is_refused_naming_the_intent() {
    let mut server = http_server();
    server["appLabel"] = json!("http-server");
    let tree = tree(
        "",
        vec![group("testdtc", vec![inbound("serverin", server, vec![])])],
    );
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let message = act(&request(tree, &clusters, &[("http-server", &[0])]))
        .unwrap_err()
        .message;
    assert!(message.contains("inbound intent \"serverin\""), "{message}");
    assert!(
        message.contains("traffic group intent \"testdtc\""),
        "{message}"
    );
    assert!(
        message.contains("\"http-server\" is not of the form key=value"),
        "{message}"
    );
}

#[test]
fn a_client_label_with_two_equals_signs_is_refused_naming_the_client() {
    let bad = client(
        "client1",
        json!({"app": "http-client", "appLabel": "app=http=client", "serviceName": "http-client",
               "namespaces": [], "cidrs": []}),
    );
    let tree = tree(
        "",
        vec![group(
            "testdtc",
            vec![inbound("serverin", http_server(), vec![bad])],
        )],
    );
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let message = act(&request(tree, &clusters, &[("http-server", &[0])]))
        .unwrap_err()
        .message;
    assert!(
        message.contains("inbound clients intent \"client1\""),
        "{message}"
    );
    assert!(message.contains("\"app=http=client\""), "{message}");
}

#[test]
fn a_missing_traffic_group_or_unplaced_server_is_refused() {
    let mut missing = tree("", vec![group("testdtc", vec![])]);
    missing["intents"] = json!([]);
    let clusters = [cluster("provider1", "cluster1", &[NETWORK_POLICY_LABEL])];
    let message = act(&request(missing, &clusters, &[("http-server", &[0])]))
        .unwrap_err()
        .message;
    assert!(
        message.contains("traffic group intent \"testdtc\" not found"),
        "{message}"
    );

    let unplaced = tree(
        "",
        vec![group(
            "testdtc",
            vec![inbound("serverin", http_server(), vec![http_client()])],
        )],
    );
    let message = act(&request(unplaced, &clusters, &[("http-client", &[0])]))
        .unwrap_err()
        .message;
    assert!(message.contains("inbound intent \"serverin\""), "{message}");
    assert!(
        message.contains("\"http-server\" is not placed"),
        "{message}"
    );
}

/// The declaration's schema of `segment`.
fn schema(segment: &str) -> jsonschema::Validator {
    let schema =
        wasmco_guest::testing::declared_schema(include_str!("../intents.json"), segment).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn schemas_accept_emco_example_bodies() {
    let inbound = schema("inbound-intents");
    let clients = schema("clients");
    let external = json!({"app": "httpbin", "appLabel": "app=httpbin", "serviceName": "httpbin",
        "externalName": "httpbin.example.com", "port": 8000, "protocol": "TCP",
        "serviceMesh": "istio", "externalSupport": true,
        "management": {"sidecarProxy": "yes", "tlsType": "NONE"}});
    for body in [http_server(), external] {
        assert!(inbound.is_valid(&body), "{body}");
    }
    // A YAML 1.1 reader turns `sidecarProxy: yes` into a boolean.
    let mut yaml_yes = http_server();
    yaml_yes["management"] = json!({"sidecarProxy": true, "tlsType": "MUTUAL"});
    assert!(inbound.is_valid(&yaml_yes));
    assert!(clients.is_valid(&http_client()["spec"]));
    assert!(schema("traffic-group-intents").is_valid(&json!({})));
}

#[test]
fn schemas_refuse_what_emco_refuses() {
    let inbound = schema("inbound-intents");
    for field in ["app", "appLabel", "serviceName", "port", "protocol"] {
        let mut body = http_server();
        body.as_object_mut().unwrap().remove(field);
        assert!(!inbound.is_valid(&body), "{field} is required");
    }
    let mut bad_port = http_server();
    bad_port["port"] = json!(0);
    assert!(!inbound.is_valid(&bad_port));
    let mut bad_label = http_server();
    bad_label["appLabel"] = json!("app=");
    assert!(!inbound.is_valid(&bad_label));
    let mut long_protocol = http_server();
    long_protocol["protocol"] = json!("TCPUDP");
    assert!(!inbound.is_valid(&long_protocol));
    let mut half_management = http_server();
    half_management["management"] = json!({"sidecarProxy": "yes"});
    assert!(!inbound.is_valid(&half_management));

    let clients = schema("clients");
    for field in ["app", "appLabel", "serviceName", "namespaces", "cidrs"] {
        let mut body = http_client()["spec"].clone();
        body.as_object_mut().unwrap().remove(field);
        assert!(!clients.is_valid(&body), "{field} is required");
    }
}
