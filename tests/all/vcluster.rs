//! The virtual cluster as `wasmco virtual-cluster` serves it, spoken to the
//! way the Kubernetes API is: discovery, verbs, content types, Status
//! objects, label selectors, watches.

use std::io::{BufRead, BufReader};

use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};

use crate::support::server::Virtual;

fn start() -> Virtual {
    Virtual::start_with("edge-1", 0, 0)
}

fn get(cluster: &Virtual, path: &str) -> (u16, Value) {
    answer(cluster.send("GET", path, "", None))
}

fn answer(response: Response) -> (u16, Value) {
    let code = response.status().as_u16();
    (
        code,
        serde_json::from_str(&response.text().unwrap()).unwrap(),
    )
}

fn deployment(replicas: u32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": replicas}})
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/shop/deployments";

#[test]
fn discovery_and_kubeconfig_describe_the_cluster() {
    let cluster = start();
    let (code, version) = get(&cluster, "/version");
    assert_eq!((code, version["major"].as_str()), (200, Some("1")));
    assert_eq!(get(&cluster, "/api").1["versions"], json!(["v1"]));
    let groups = get(&cluster, "/apis").1;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for group in [
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "apiextensions.k8s.io",
    ] {
        assert!(names.contains(&group), "{group} missing from {names:?}");
    }
    let apps = get(&cluster, "/apis/apps/v1").1;
    assert!(
        apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments" && r["namespaced"] == true)
    );
    let text = std::fs::read_to_string(&cluster.kubeconfig_path).unwrap();
    let config = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    assert_eq!(
        config.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .server
            .as_deref(),
        Some(cluster.base.as_str())
    );
}

#[test]
fn objects_follow_the_kubernetes_conventions() {
    let cluster = start();
    let json = "application/json";
    // Namespaced objects need their namespace.
    let (code, status) =
        answer(cluster.send("POST", DEPLOYMENTS, json, Some(deployment(1).to_string())));
    assert_eq!(
        (code, status["kind"].as_str(), status["reason"].as_str()),
        (404, Some("Status"), Some("NotFound"))
    );
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}});
    assert_eq!(
        answer(cluster.send(
            "POST",
            "/api/v1/namespaces",
            json,
            Some(namespace.to_string())
        ))
        .0,
        201
    );
    let (code, created) =
        answer(cluster.send("POST", DEPLOYMENTS, json, Some(deployment(1).to_string())));
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["namespace"], "shop");
    assert_eq!(created["metadata"]["generation"], 1);
    let (code, dup) =
        answer(cluster.send("POST", DEPLOYMENTS, json, Some(deployment(1).to_string())));
    assert_eq!(
        (code, dup["reason"].as_str(), dup["code"].as_u64()),
        (409, Some("AlreadyExists"), Some(409))
    );
    let (code, missing) = get(&cluster, &format!("{DEPLOYMENTS}/db"));
    assert_eq!(
        (code, missing["message"].as_str()),
        (404, Some("deployments.apps \"db\" not found"))
    );
    // Server-side apply: field manager required; creates with 201, updates with 200.
    let apply = "application/apply-patch+yaml";
    let no_manager = cluster.send(
        "PATCH",
        &format!("{DEPLOYMENTS}/api"),
        apply,
        Some("{}".into()),
    );
    assert_eq!(no_manager.status().as_u16(), 400);
    let applied = cluster.send("PATCH", &format!("{DEPLOYMENTS}/api?fieldManager=wasmco"), apply,
        Some("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, labels: {app: api}}\nspec: {replicas: 2}\n".into()));
    assert_eq!(answer(applied).0, 201);
    let (code, scaled) = answer(cluster.send(
        "PATCH",
        &format!("{DEPLOYMENTS}/web?fieldManager=wasmco&force=true"),
        apply,
        Some(deployment(3).to_string()),
    ));
    assert_eq!(
        (
            code,
            scaled["spec"]["replicas"].as_u64(),
            scaled["metadata"]["generation"].as_u64()
        ),
        (200, Some(3), Some(2))
    );
    assert!(
        scaled["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > created["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
    );
    // Merge and JSON patches; an unknown content type.
    let merge = cluster.send(
        "PATCH",
        &format!("{DEPLOYMENTS}/web"),
        "application/merge-patch+json",
        Some(r#"{"metadata":{"labels":{"tier":"front"}}}"#.into()),
    );
    assert_eq!(answer(merge).1["metadata"]["labels"]["tier"], "front");
    let json_patch = cluster.send(
        "PATCH",
        &format!("{DEPLOYMENTS}/web"),
        "application/json-patch+json",
        Some(r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#.into()),
    );
    assert_eq!(answer(json_patch).1["spec"]["replicas"], 4);
    let (code, unknown) = answer(cluster.send("POST", DEPLOYMENTS, "text/plain", Some("x".into())));
    assert_eq!(
        (code, unknown["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    // Lists with label selectors, across namespaces.
    let (_, list) = get(&cluster, &format!("{DEPLOYMENTS}?labelSelector=app%3Dweb"));
    assert_eq!(list["kind"], "DeploymentList");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let (_, all) = get(
        &cluster,
        "/apis/apps/v1/deployments?labelSelector=app%20in%20(web,api)",
    );
    assert_eq!(all["items"].as_array().unwrap().len(), 2);
    // The status subresource changes status only.
    let status = cluster.send(
        "PUT",
        &format!("{DEPLOYMENTS}/web/status"),
        json,
        Some(r#"{"status":{"availableReplicas":4}}"#.into()),
    );
    let (_, with_status) = answer(status);
    assert_eq!(
        (
            with_status["status"]["availableReplicas"].as_u64(),
            with_status["spec"]["replicas"].as_u64()
        ),
        (Some(4), Some(4))
    );
    // Delete answers the object; then it is gone.
    assert_eq!(
        answer(cluster.send("DELETE", &format!("{DEPLOYMENTS}/web"), "", None)).0,
        200
    );
    assert_eq!(get(&cluster, &format!("{DEPLOYMENTS}/web")).0, 404);
}

#[test]
fn watches_stream_added_modified_and_deleted() {
    // ConfigMaps: no simulated readiness adds status updates to the stream.
    let cluster = start();
    let json = "application/json";
    let maps = "/api/v1/namespaces/default/configmaps";
    let url = format!("{}{maps}?watch=true&timeoutSeconds=3", cluster.base);
    // The cluster subscribes a watch to its events before it answers: once
    // the answer's head is here, nothing the test does next is missed.
    let (watching, answered) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        let response = Client::builder()
            .timeout(None)
            .build()
            .unwrap()
            .get(url)
            .send()
            .unwrap();
        watching.send(()).unwrap();
        BufReader::new(response)
            .lines()
            .map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap())
            .map(|event| {
                format!(
                    "{} {}",
                    event["type"].as_str().unwrap(),
                    event["object"]["data"]["v"].as_str().unwrap()
                )
            })
            .collect::<Vec<_>>()
    });
    answered
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the watch answers");
    let map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"v": "1"}});
    cluster.send("POST", maps, json, Some(map.to_string()));
    cluster.send(
        "PATCH",
        &format!("{maps}/settings"),
        "application/merge-patch+json",
        Some(r#"{"data":{"v":"2"}}"#.into()),
    );
    cluster.send("DELETE", &format!("{maps}/settings"), "", None);
    assert_eq!(
        watcher.join().unwrap(),
        ["ADDED 1", "MODIFIED 2", "DELETED 2"]
    );
}
