//! A cluster made with one Kubernetes moved to the next minor version by a
//! rolling upgrade, on the lab's real machines: the masters first, each
//! worker drained before its kubelet changes, and an app spread over the
//! workers ready throughout.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::lab::Lab;
use support::{deploy_file, on_master, on_node, output_of, recorder, runtime, script};
use wasmco_clusters::{DeployProgress, DeploySettings, Deployment, deploy, upgrade};
use wasmco_nodes::Secret;

#[test]
fn an_upgrade_moves_every_machine_to_the_next_kubernetes_while_an_app_stays_ready() {
    // Packed before the test enters the lab's network, which reaches no
    // module proxy.
    let current = output_of(&script("package.sh"));
    let next = support::output_with(&script("package.sh"), &["next"]);
    let lab = Lab::up(3);
    let machines: Vec<_> = lab.nodes.iter().collect();
    let key = lab.file("id_rsa");
    let config = |archive: &str| {
        wasmco_core::eggo::parse(&deploy_file(&machines, archive, &key)).expect("the file parses")
    };
    let made = support::deployment(&config(&current));
    let settings = DeploySettings::default();
    let (_, report) = recorder();
    runtime().block_on(async {
        let state = deploy(&made, &settings, DeployProgress::default(), report.clone())
            .await
            .unwrap_or_else(|error| panic!("the deploy failed: {error}"));
        let sleeper = support::spread_sleeper(2);
        // As an app that must stay up says so: drains evict its pods one
        // at a time, each after the one before is replaced.
        let budget = r#"{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"sleeper"},
            "spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"sleeper"}}}}"#;
        on_master(
            &lab,
            &format!(
                "echo '{budget}' | kubectl apply -f - >/dev/null && \
                 echo '{sleeper}' | kubectl apply -f - >/dev/null && \
                 kubectl rollout status deployment/sleeper --timeout=150s >/dev/null"
            ),
        )
        .await;

        // How many of the app's pods are ready, once a second, for as long
        // as the upgrade runs (`?` while the one API server restarts).
        let upgrading = Arc::new(AtomicBool::new(true));
        let watching = upgrading.clone();
        let lab_ref = &lab;
        let watch = async move {
            let mut seen = Vec::new();
            while watching.load(Ordering::Relaxed) {
                let ready = on_master(
                    lab_ref,
                    "kubectl get deployment sleeper -o jsonpath='{.status.readyReplicas}' 2>/dev/null || echo '?'",
                )
                .await;
                seen.push(ready.trim().to_owned());
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            seen
        };
        let key_text = std::fs::read_to_string(&key).expect("the key");
        let newer = Deployment::prepare(
            &config(&next),
            Secret::PrivateKey(key_text),
            Some(made.material.clone()),
        )
        .expect("the deployment with the next archive");
        let started = Instant::now();
        let roll = async {
            let outcome = upgrade(&newer, &settings, state, report.clone()).await;
            upgrading.store(false, Ordering::Relaxed);
            outcome
        };
        let (upgraded, seen) = tokio::join!(roll, watch);
        let upgraded = upgraded.unwrap_or_else(|error| panic!("the upgrade failed: {error}"));
        eprintln!("upgraded 3 machines in {:?}; ready pods seen: {seen:?}", started.elapsed());
        assert!(upgraded.finished);
        assert!(
            seen.iter().all(|ready| ready == "?" || ready == "1" || ready == "2"),
            "the app always had a ready pod: {seen:?}"
        );
        assert!(seen.iter().any(|ready| ready == "2" || ready == "1"), "{seen:?}");

        let versions = on_master(
            &lab,
            "kubectl get nodes -o jsonpath='{.items[*].status.nodeInfo.kubeletVersion}'; echo; \
             kubectl version -o json | grep -m1 -o '\"gitVersion\": \"v1.35[^\"]*' | tail -1",
        )
        .await;
        assert!(versions.starts_with("v1.35.4 v1.35.4"), "{versions}");
        assert!(versions.contains("v1.35.4"), "the API server too: {versions}");
        let ready = on_master(&lab, "kubectl get deployment sleeper -o jsonpath='{.status.readyReplicas}'").await;
        assert_eq!(ready.trim(), "2");
        // The kubelet it replaced is kept for a rollback.
        let previous = on_node(&lab, 1, "/usr/bin/kubelet.wasmco-previous --version").await;
        assert!(previous.contains("v1.34"), "{previous}");
    });
}
