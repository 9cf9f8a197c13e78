//! A virtual cluster over HTTP, as kubectl, Helm and controllers see it:
//! completing Pods and Jobs, `kubectl get all` categories, Nodes, Endpoints
//! and admission webhook configurations.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use wasmco_vcluster::{Behaviour, Nodes, VirtualCluster};

/// One request over a fresh connection (blocking, so no HTTP client crate
/// is needed): the status code and the JSON body.
async fn call(addr: SocketAddr, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let path = path.to_owned();
    let method = method.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        let (head, body) = response.split_once("\r\n\r\n").expect("a whole response");
        let code = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("a status line");
        (code, serde_json::from_str(body).unwrap_or(Value::Null))
    })
    .await
    .expect("the request task")
}

async fn start(behaviour: Behaviour) -> VirtualCluster {
    VirtualCluster::start(
        "Test_Cluster",
        "127.0.0.1:0".parse().expect("addr"),
        behaviour,
    )
    .await
    .expect("start")
}

/// Polls `path` until `done` holds of it, for at most five seconds.
async fn wait_for(addr: SocketAddr, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (_, object) = call(addr, "GET", path, None).await;
        if done(&object) {
            return object;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} never got there: {object}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pod(name: &str, restart_policy: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"restartPolicy": restart_policy,
                    "containers": [{"name": "main", "image": "busybox"}]}})
}

#[tokio::test]
async fn pods_that_do_not_restart_succeed_and_others_keep_running() {
    let cluster = start(Behaviour {
        ready_after: Duration::from_millis(50),
        ..Default::default()
    })
    .await;
    let addr = cluster.addr();
    for (name, policy) in [
        ("hook", "Never"),
        ("retry", "OnFailure"),
        ("server", "Always"),
    ] {
        let (code, created) = call(
            addr,
            "POST",
            "/api/v1/namespaces/default/pods",
            Some(pod(name, policy)),
        )
        .await;
        assert_eq!(code, 201, "{created}");
    }
    for name in ["hook", "retry"] {
        let done = wait_for(
            addr,
            &format!("/api/v1/namespaces/default/pods/{name}"),
            |p| !p["status"]["phase"].is_null(),
        )
        .await;
        assert_eq!(done["status"]["phase"], "Succeeded", "{done}");
        let container = &done["status"]["containerStatuses"][0];
        assert_eq!(container["name"], "main");
        assert_eq!(container["state"]["terminated"]["exitCode"], 0);
        assert_eq!(container["state"]["terminated"]["reason"], "Completed");
    }
    let server = wait_for(addr, "/api/v1/namespaces/default/pods/server", |p| {
        !p["status"]["phase"].is_null()
    })
    .await;
    assert_eq!(server["status"]["phase"], "Running");
    assert!(server["status"]["containerStatuses"][0]["state"]["running"].is_object());
}

#[tokio::test]
async fn jobs_complete() {
    let cluster = start(Behaviour::default()).await;
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}]}}}});
    let (code, _) = call(
        cluster.addr(),
        "POST",
        "/apis/batch/v1/namespaces/default/jobs",
        Some(job),
    )
    .await;
    assert_eq!(code, 201);
    let done = wait_for(
        cluster.addr(),
        "/apis/batch/v1/namespaces/default/jobs/migrate",
        |j| !j["status"]["succeeded"].is_null(),
    )
    .await;
    assert_eq!(done["status"]["succeeded"], 1);
    let conditions = done["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Complete" && c["status"] == "True"),
        "{done}"
    );
}

/// What `kubectl get all` expands to: every type whose discovery entry is
/// in the `all` category.
async fn category_all(addr: SocketAddr) -> Vec<String> {
    let mut all = Vec::new();
    for path in [
        "/api/v1",
        "/apis/apps/v1",
        "/apis/batch/v1",
        "/apis/autoscaling/v2",
        "/apis/rbac.authorization.k8s.io/v1",
    ] {
        let (code, list) = call(addr, "GET", path, None).await;
        assert_eq!(code, 200, "{path}");
        for resource in list["resources"].as_array().into_iter().flatten() {
            let categories = resource["categories"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if categories.contains(&json!("all")) {
                all.push(resource["name"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    all.sort();
    all
}

#[tokio::test]
async fn discovery_puts_the_workload_kinds_in_the_all_category() {
    let cluster = start(Behaviour::default()).await;
    assert_eq!(
        category_all(cluster.addr()).await,
        [
            "cronjobs",
            "daemonsets",
            "deployments",
            "horizontalpodautoscalers",
            "jobs",
            "pods",
            "replicasets",
            "replicationcontrollers",
            "services",
            "statefulsets"
        ]
    );
}

#[tokio::test]
async fn a_cluster_has_a_ready_node_with_capacity() {
    let cluster = start(Behaviour::default()).await;
    let (code, nodes) = call(cluster.addr(), "GET", "/api/v1/nodes", None).await;
    assert_eq!(code, 200);
    let items = nodes["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{nodes}");
    let node = &items[0];
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    assert_eq!(name, "test-cluster-control-plane");
    assert!(node["metadata"].get("namespace").is_none());
    let labels = &node["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], name);
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["node-role.kubernetes.io/control-plane"], "");
    for field in ["allocatable", "capacity"] {
        assert_eq!(node["status"][field]["cpu"], "8");
        assert_eq!(node["status"][field]["memory"], "32Gi");
        assert_eq!(node["status"][field]["pods"], "110");
    }
    let (code, _) = call(
        cluster.addr(),
        "GET",
        "/api/v1/namespaces/default/nodes",
        None,
    )
    .await;
    assert_eq!(code, 404, "nodes are cluster-scoped");
    let (_, by_label) = call(
        cluster.addr(),
        "GET",
        "/api/v1/nodes?labelSelector=kubernetes.io/os%3Dlinux",
        None,
    )
    .await;
    assert_eq!(by_label["items"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn node_count_and_capacity_come_from_the_behaviour() {
    let cluster = start(Behaviour {
        nodes: Nodes {
            count: 3,
            cpu: "4".into(),
            memory: "16Gi".into(),
            pods: 50,
        },
        ..Default::default()
    })
    .await;
    let (_, nodes) = call(cluster.addr(), "GET", "/api/v1/nodes", None).await;
    let items = nodes["items"].as_array().cloned().unwrap_or_default();
    let mut names: Vec<&str> = items
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "test-cluster-control-plane",
            "test-cluster-worker-1",
            "test-cluster-worker-2"
        ]
    );
    for node in &items {
        assert_eq!(
            node["status"]["allocatable"],
            json!({"cpu": "4", "memory": "16Gi", "pods": "50", "ephemeral-storage": "100Gi"})
        );
    }
    let workers = items
        .iter()
        .filter(|n| n["metadata"]["labels"]["node-role.kubernetes.io/worker"] == "")
        .count();
    assert_eq!(workers, 2);
}

/// Creates, lists and deletes one object at `collection`.
async fn round_trip(addr: SocketAddr, collection: &str, object: Value) {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (code, created) = call(addr, "POST", collection, Some(object)).await;
    assert_eq!(code, 201, "{created}");
    let (code, list) = call(addr, "GET", collection, None).await;
    assert_eq!(code, 200);
    assert_eq!(
        list["items"][0]["metadata"]["name"],
        name.as_str(),
        "{list}"
    );
    let (code, _) = call(addr, "DELETE", &format!("{collection}/{name}"), None).await;
    assert_eq!(code, 200);
    let (_, list) = call(addr, "GET", collection, None).await;
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn endpoints_and_admission_webhooks_are_stored() {
    let cluster = start(Behaviour::default()).await;
    let addr = cluster.addr();
    round_trip(
        addr,
        "/api/v1/namespaces/default/endpoints",
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
               "subsets": [{"addresses": [{"ip": "10.244.0.10"}], "ports": [{"port": 80}]}]}),
    )
    .await;
    let webhook = json!([{"name": "check.example.com", "admissionReviewVersions": ["v1"],
        "sideEffects": "None", "clientConfig": {"service": {"namespace": "monitoring", "name": "operator"}}}]);
    for (plural, kind) in [
        (
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
        ),
        (
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
        ),
    ] {
        let collection = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
        round_trip(
            addr,
            &collection,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                   "metadata": {"name": "prometheus-admission"}, "webhooks": webhook}),
        )
        .await;
        let (code, _) = call(
            addr,
            "GET",
            &format!("/apis/admissionregistration.k8s.io/v1/namespaces/default/{plural}"),
            None,
        )
        .await;
        assert_eq!(code, 404, "{kind} is cluster-scoped");
    }
    let (_, group) = call(addr, "GET", "/apis/admissionregistration.k8s.io", None).await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
}

/// The events of a watch of `path` that ends by itself (give it a
/// `timeoutSeconds`), in order.
async fn watch_events(addr: SocketAddr, path: &str) -> Vec<Value> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        // Chunked: each event is a chunk of its own, between size lines.
        response
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
            .filter(|event| event.get("type").is_some())
            .collect()
    })
    .await
    .expect("the watch task")
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[tokio::test]
async fn a_watch_resumes_from_a_resource_version_or_is_told_it_is_too_old() {
    let cluster = start(Behaviour::default()).await;
    let addr = cluster.addr();
    let collection = "/api/v1/namespaces/default/configmaps";
    let (_, first) = call(addr, "POST", collection, Some(config_map("first"))).await;
    let seen = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    call(addr, "POST", collection, Some(config_map("second"))).await;
    let (code, _) = call(addr, "DELETE", &format!("{collection}/first"), None).await;
    assert_eq!(code, 200);

    // What a watcher that saw `first` made missed while it was away.
    let resumed = format!("{collection}?watch=1&resourceVersion={seen}&timeoutSeconds=1");
    let events = watch_events(addr, &resumed).await;
    let missed: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            let name = e["object"]["metadata"]["name"].as_str().unwrap();
            (e["type"].as_str().unwrap(), name)
        })
        .collect();
    assert_eq!(missed, [("ADDED", "second"), ("DELETED", "first")]);
    // The deletion carries a version of its own, newer than the add's.
    let version = |e: &Value| {
        e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert!(version(&events[1]) > version(&events[0]));

    // Once more changes came than the cluster keeps, it cannot say what
    // was missed: the watcher must list again.
    for i in 0..300 {
        call(
            addr,
            "POST",
            collection,
            Some(config_map(&format!("more-{i}"))),
        )
        .await;
    }
    let events = watch_events(addr, &resumed).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410);
}
