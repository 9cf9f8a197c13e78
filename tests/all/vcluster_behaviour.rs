//! The virtual cluster's own behaviour, in process: readiness after a
//! delay, injected failures, refused connections.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmco_vcluster::{Behaviour, VirtualCluster};

use crate::support::wait::eventually_async;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn apply(
    client: &reqwest::Client,
    cluster: &VirtualCluster,
    replicas: u32,
) -> reqwest::Result<reqwest::Response> {
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": replicas}});
    client
        .patch(format!(
            "http://{}{DEPLOYMENTS}/web?fieldManager=wasmco",
            cluster.addr()
        ))
        .header("content-type", "application/apply-patch+yaml")
        .body(body.to_string())
        .send()
        .await
}

async fn status(client: &reqwest::Client, cluster: &VirtualCluster) -> Value {
    let url = format!("http://{}{DEPLOYMENTS}/web", cluster.addr());
    let object: Value = client.get(url).send().await.unwrap().json().await.unwrap();
    object["status"].clone()
}

#[tokio::test]
async fn deployments_become_available_after_the_delay() {
    let delay = Duration::from_millis(300);
    let cluster = VirtualCluster::start(
        "ready",
        "127.0.0.1:0".parse().unwrap(),
        Behaviour {
            ready_after: delay,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let applied = Instant::now();
    assert_eq!(apply(&client, &cluster, 3).await.unwrap().status(), 201);
    assert!(status(&client, &cluster).await.is_null(), "ready at once");
    let (client, cluster) = (&client, &cluster);
    let status = eventually_async(
        "the Deployment ready",
        Duration::from_secs(5).saturating_sub(applied.elapsed()),
        || async move {
            let status = status(client, cluster).await;
            if status["availableReplicas"] == 3 {
                Ok(status)
            } else {
                Err(status)
            }
        },
    )
    .await;
    assert!(applied.elapsed() >= delay);
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["conditions"][0]["type"], "Available");
}

#[tokio::test]
async fn injected_faults_and_refused_connections() {
    let mut cluster = VirtualCluster::start(
        "faulty",
        "127.0.0.1:0".parse().unwrap(),
        Behaviour::default(),
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    cluster.set_behaviour(Behaviour {
        fail_with: Some(500),
        ..Default::default()
    });
    let failed = apply(&client, &cluster, 1).await.unwrap();
    assert_eq!(failed.status(), 500);
    let body: Value = failed.json().await.unwrap();
    assert_eq!(
        (body["kind"].as_str(), body["reason"].as_str()),
        (Some("Status"), Some("InternalError"))
    );
    cluster.set_behaviour(Behaviour {
        fail_with: Some(429),
        ..Default::default()
    });
    let throttled = apply(&client, &cluster, 1).await.unwrap();
    assert_eq!(
        (
            throttled.status().as_u16(),
            throttled.headers()["retry-after"].to_str().unwrap()
        ),
        (429, "1")
    );
    cluster.set_behaviour(Behaviour {
        latency: Duration::from_millis(200),
        ..Default::default()
    });
    let started = Instant::now();
    assert_eq!(apply(&client, &cluster, 1).await.unwrap().status(), 201);
    assert!(started.elapsed() >= Duration::from_millis(200));
    cluster.set_behaviour(Behaviour::default());
    cluster.refuse_connections().await;
    let refused = reqwest::Client::new()
        .get(format!("http://{}/version", cluster.addr()))
        .send()
        .await
        .unwrap_err();
    assert!(refused.is_connect(), "{refused}");
    cluster.reopen().await.unwrap();
    // The objects survived the outage.
    assert_eq!(apply(&client, &cluster, 2).await.unwrap().status(), 200);
}
