//! Service discovery (EMCO dtc's sds) through the REST API, on two virtual
//! clusters: a server app on `west`, its client on `east`, a traffic group
//! naming the server's Service. The client's cluster gets a Service
//! without a selector and its Endpoints at the server's node, after a
//! `kill -9` of the host too; an update that takes the client away, or a
//! server Service no other cluster can reach, takes them back, and says
//! why in the DIG's status; a terminate removes them.

use serde_json::{Value, json};

use crate::deploy::action;
use crate::kube_apiserver::kubectl;
use crate::support::clusters::SCENARIO_PATIENCE;
use crate::support::server::{Server, Virtual, doc, expect};
use crate::support::wait::wait_until;

const CA: &str = "/v2/projects/shop/composite-apps/store/v1";
const DIG: &str = "/v2/projects/shop/composite-apps/store/v1/deployment-intent-groups/live";

/// The server: a Deployment behind a `type` Service `web-svc` on 8080.
fn server_app(service_type: &str) -> Vec<u8> {
    let node_port = match service_type {
        "NodePort" => ", nodePort: 30080",
        _ => "",
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: 1\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    \
         spec: {{containers: [{{name: web, image: web}}]}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: web-svc}}\nspec:\n  type: {service_type}\n  \
         selector: {{app: web}}\n  ports: [{{name: http, port: 8080, targetPort: 80, protocol: TCP{node_port}}}]\n"
    )
    .into_bytes()
}

fn client_placement(label: &str) -> Value {
    doc(
        "client",
        json!({"app": "client", "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": label}]}}),
    )
}

/// Provider `edge` with `east` and `west`, the composite app and the DIG
/// with its placement and traffic group, approved.
fn set_up(server: &Server, east: &Virtual, west: &Virtual) {
    expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    for (name, cluster) in [("east", east), ("west", west)] {
        server.register_labelled("edge", name, &cluster.kubeconfig, &[name]);
    }
    server.upload_action("dtc", 1, "dtc.wasm");
    expect(server.post("/v2/projects", doc("shop", json!({}))), 201);
    expect(
        server.post(
            "/v2/projects/shop/composite-apps",
            doc("store", json!({"compositeAppVersion": "v1"})),
        ),
        201,
    );
    let client = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: client}\ndata: {server: 'http://web-svc:8080'}\n";
    for (app, manifests) in [
        ("server", server_app("NodePort")),
        ("client", client.to_vec()),
    ] {
        expect(
            server.upload(&format!("{CA}/apps"), doc(app, json!({})), Some(manifests)),
            201,
        );
    }
    expect(
        server.post(
            &format!("{CA}/composite-profiles"),
            doc("profile", json!({})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/deployment-intent-groups"),
            doc(
                "live",
                json!({"compositeProfile": "profile", "version": "r1"}),
            ),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/generic-placement-intents"),
            doc("gpi", json!({})),
        ),
        201,
    );
    let app_intents = format!("{DIG}/generic-placement-intents/gpi/app-intents");
    let server_placement = json!({"app": "server", "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": "west"}]}});
    expect(
        server.post(&app_intents, doc("server", server_placement)),
        201,
    );
    expect(server.post(&app_intents, client_placement("east")), 201);
    let group = format!("{DIG}/traffic-group-intents");
    expect(server.post(&group, doc("tg", json!({}))), 201);
    let inbound = json!({"app": "server", "appLabel": "app=web", "serviceName": "web-svc",
                         "port": 80, "protocol": "TCP"});
    expect(
        server.post(
            &format!("{group}/tg/inbound-intents"),
            doc("serverin", inbound),
        ),
        201,
    );
    let clients = json!({"app": "client", "appLabel": "app=client", "serviceName": "client",
                         "namespaces": [], "cidrs": []});
    expect(
        server.post(
            &format!("{group}/tg/inbound-intents/serverin/clients"),
            doc("client1", clients),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "dtc": "tg"}}),
            ),
        ),
        201,
    );
    expect(action(server, DIG, "approve"), 202);
}

/// `kind`/`name` in `default` on `cluster`, if it is there.
fn get(cluster: &Virtual, kind: &str, name: &str) -> Option<Value> {
    let output = kubectl(
        &cluster.kubeconfig_path,
        &[
            "get",
            kind,
            name,
            "--namespace=default",
            "--ignore-not-found",
            "--output=json",
        ],
    );
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    (!text.trim().is_empty()).then(|| serde_json::from_str(&text).unwrap())
}

/// The client app placed on the clusters labelled `label`, and the DIG updated.
fn place_client(server: &Server, label: &str) {
    expect(
        server.put(
            &format!("{DIG}/generic-placement-intents/gpi/app-intents/client"),
            client_placement(label),
        ),
        200,
    );
    expect(action(server, DIG, "update"), 202);
}

/// The server app's Service of type `service_type`, and the DIG updated.
fn serve_as(server: &Server, service_type: &str) {
    expect(
        server.upload_put(
            &format!("{CA}/apps/server"),
            doc("server", json!({})),
            Some(server_app(service_type)),
        ),
        200,
    );
    expect(action(server, DIG, "update"), 202);
}

fn status(server: &Server) -> Value {
    expect(server.get(&format!("{DIG}/status?output=detail")), 200)
}

#[test]
fn the_clients_cluster_reaches_the_servers_node_after_a_restart_an_update_takes_it_back() {
    let (east, mut west) = (Virtual::start("east"), Virtual::start("west"));
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(data.path(), &["--resync-interval", "2s"]);
    set_up(&server, &east, &west);
    expect(action(&server, DIG, "instantiate"), 202);
    // Nothing of the follow-up is kept in memory only.
    server.sigkill();
    server = Server::start_with(data.path(), &["--resync-interval", "2s"]);

    wait_until(
        "the client's cluster to get the server's endpoints",
        SCENARIO_PATIENCE,
        || get(&east, "endpoints", "web-svc").is_some(),
    );
    let node = kubectl(&west.kubeconfig_path, &["get", "nodes", "--output=json"]);
    let nodes: Value = serde_json::from_slice(&node.stdout).unwrap();
    let address = nodes["items"][0]["status"]["addresses"][0]["address"].clone();
    let endpoints = get(&east, "endpoints", "web-svc").unwrap();
    assert_eq!(
        endpoints["subsets"][0]["addresses"][0]["ip"], address,
        "{endpoints}"
    );
    assert_eq!(
        endpoints["subsets"][0]["ports"],
        json!([{"name": "8080", "port": 30080, "protocol": "TCP"}])
    );
    let service = get(&east, "service", "web-svc").unwrap();
    assert_eq!(service["spec"]["clusterIP"], "None", "{service}");
    assert!(service["spec"].get("selector").is_none(), "{service}");
    // The server's own cluster has the real Service, and nothing else.
    let real = get(&west, "service", "web-svc").unwrap();
    assert_eq!(real["spec"]["type"], "NodePort");
    assert!(get(&west, "endpoints", "web-svc").is_none());
    // The DIG's status shows what was made, as an app of its own.
    let shown = status(&server);
    let apps: Vec<&str> = shown["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(apps.contains(&"service-discovery"), "{shown}");

    // The server's cluster restarts empty: while rsync puts the server
    // back, its Service cannot be read, and the client keeps what it has.
    west.restart_empty("west");
    let started = std::time::Instant::now();
    wait_until("the server to be back on west", SCENARIO_PATIENCE, || {
        assert!(
            get(&east, "endpoints", "web-svc").is_some(),
            "the client lost the server {:?} after west restarted",
            started.elapsed()
        );
        get(&west, "service", "web-svc").is_some()
    });

    // The client moves to the server's cluster: nothing to make known.
    place_client(&server, "west");
    wait_until("the mirror to leave east", SCENARIO_PATIENCE, || {
        get(&east, "endpoints", "web-svc").is_none() && get(&east, "service", "web-svc").is_none()
    });

    // Back on east, with a server Service other clusters cannot reach.
    serve_as(&server, "ClusterIP");
    place_client(&server, "east");
    wait_until(
        "the status to say why the server is not made known",
        SCENARIO_PATIENCE,
        || {
            status(&server)["serviceDiscovery"]
                .as_str()
                .is_some_and(|note| note.contains("type ClusterIP"))
        },
    );
    let note = status(&server)["serviceDiscovery"].clone();
    assert!(
        note.as_str()
            .unwrap()
            .starts_with("inbound intent serverin of traffic group intent tg: "),
        "{note}"
    );
    assert!(get(&east, "endpoints", "web-svc").is_none());

    // Reachable again, then terminated: the mirror goes with the DIG.
    serve_as(&server, "NodePort");
    wait_until("the mirror to be back", SCENARIO_PATIENCE, || {
        get(&east, "endpoints", "web-svc").is_some()
    });
    assert!(status(&server).get("serviceDiscovery").is_none());
    expect(action(&server, DIG, "terminate"), 202);
    wait_until("the mirror to go with the DIG", SCENARIO_PATIENCE, || {
        get(&east, "endpoints", "web-svc").is_none()
            && get(&east, "service", "web-svc").is_none()
            && get(&west, "service", "web-svc").is_none()
    });
}
