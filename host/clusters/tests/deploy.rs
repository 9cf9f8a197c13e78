//! A cluster deployed from an Eggo deploy file onto real machines made on
//! this host (tests/nodes/lab.sh): etcd and the control plane on one,
//! kubelets on the others, the binaries and images from a package archive
//! as Eggo ships them (tests/nodes/package.sh); and taken down again by
//! Eggo's cleanup.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use support::lab::Lab;
use support::{lab_deployment, on_master, on_node, recorder, runtime};
use wasmco_clusters::{
    DeployError, DeployProgress, DeploySettings, Phase, Report, cleanup, deploy,
};
use wasmco_nodes::{NodeAddress, NodeError, Secret, SessionSettings};

#[test]
fn an_eggo_file_deploys_a_cluster_whose_pods_run() {
    let lab = Lab::up(3);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let deployment = lab_deployment(&lab, &machines);
    let (reports, report) = recorder();
    let settings = DeploySettings::default();

    runtime().block_on(async {
            let started = Instant::now();
            let state = deploy(&deployment, &settings, DeployProgress::default(), report.clone())
                .await
                .unwrap_or_else(|error| panic!("the deploy failed: {error}"));
            eprintln!("deployed in {:?}", started.elapsed());
            assert!(state.finished, "{state:?}");
            for node in &lab.nodes {
                let progress = &state.nodes[&node.name];
                assert!(progress.done.contains(&Phase::Infrastructure), "{progress:?}");
                assert!(progress.host_key.is_some());
                assert_eq!(progress.error, None);
            }
            let progressed = reports.lock().unwrap().len();
            assert!(progressed > 50, "progress was reported step by step: {progressed}");

            let nodes = on_master(&lab, "kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}'").await;
            assert_eq!(nodes.trim(), "node2=True node3=True", "{nodes}");

            // Real pods of the local busybox image on the two workers.
            let sleeper = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"sleeper"},
                "spec":{"replicas":2,"selector":{"matchLabels":{"app":"sleeper"}},
                "template":{"metadata":{"labels":{"app":"sleeper"}},"spec":{"containers":[{
                "name":"sleeper","image":"localhost/busybox:local","imagePullPolicy":"Never",
                "command":["sleep","3600"]}]}}}}"#;
            let pods = on_master(
                &lab,
                &format!(
                    "echo '{sleeper}' | kubectl apply -f - >/dev/null && \
                     kubectl rollout status deployment/sleeper --timeout=150s >/dev/null && \
                     kubectl get pods -l app=sleeper --field-selector=status.phase=Running \
                     -o jsonpath='{{range .items[*]}}{{.spec.nodeName}} {{.status.podIP}}{{\"\\n\"}}{{end}}'"
                ),
            )
            .await;
            let placed: Vec<&str> = pods.lines().filter(|line| !line.is_empty()).collect();
            assert_eq!(placed.len(), 2, "{pods}");
            for line in placed {
                assert!(line.starts_with("node2 10.244.") || line.starts_with("node3 10.244."), "{line}");
            }

            // The admin kubeconfig it would be registered with reaches the
            // cluster from wasmco's side, through the policy rsync applies.
            let policy = wasmco_pki::kubeconfig::KubeconfigPolicy::default();
            let kubeconfig = policy
                .check(deployment.admin_kubeconfig().as_bytes())
                .expect("the admin kubeconfig passes the policy");
            let client = kube::Client::try_from(
                kubeconfig.client_config(&policy).await.expect("a client config"),
            )
            .expect("a client");
            let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
            let names: Vec<String> = nodes
                .list(&Default::default())
                .await
                .expect("the nodes, listed from wasmco")
                .items
                .into_iter()
                .filter_map(|node| node.metadata.name)
                .collect();
            assert_eq!(names, ["node2", "node3"]);

            // Running the same file again changes nothing: no service restarts.
            let since = "systemctl show -p ActiveEnterTimestampMonotonic --value kube-apiserver etcd kube-controller-manager kube-scheduler";
            let before = on_master(&lab, since).await;
            let again = deploy(&deployment, &settings, state.clone(), report.clone())
                .await
                .expect("a second deploy");
            assert!(again.finished);
            assert_eq!(on_master(&lab, since).await, before, "nothing restarted");

            // Cleanup gives the machines back: nothing of the cluster runs
            // and nothing the deploy put there is left; a second one finds
            // nothing to do and ends.
            let cleaned = cleanup(&deployment, &settings, again.clone(), report.clone())
                .await
                .unwrap_or_else(|error| panic!("the cleanup failed: {error}"));
            assert!(cleaned.finished, "{cleaned:?}");
            for (node, machine) in lab.nodes.iter().enumerate() {
                let done = &cleaned.nodes[&machine.name].done;
                assert!(done.contains(&Phase::Cleanup) && done.contains(&Phase::Postcleanup), "{done:?}");
                let left = on_node(&lab, node, support::LEFT_BEHIND).await;
                assert_eq!(left.trim(), "", "{} after the cleanup", machine.name);
            }
            cleanup(&deployment, &settings, cleaned, report.clone())
                .await
                .expect("a second cleanup");
        });
}

#[test]
fn a_refused_login_or_a_missing_machine_stops_the_deploy_before_it_touches_anything() {
    let lab = Lab::up(2);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let mut deployment = lab_deployment(&lab, &machines);
    let settings = DeploySettings {
        session: SessionSettings {
            connect_timeout: Duration::from_secs(3),
            ..SessionSettings::default()
        },
        ..DeploySettings::default()
    };
    runtime().block_on(async {
        let right = deployment.login.clone();
        deployment.login.secret = Secret::Password("not the password".into());
        let (reports, report) = recorder();
        let refused = deploy(&deployment, &settings, DeployProgress::default(), report)
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, DeployError::Node { phase: Phase::Infrastructure, error: NodeError::LoginRefused { node, .. } } if node == "node1" || node == "node2"),
            "{refused:?}"
        );
        let last = reports.lock().unwrap().last().cloned().unwrap();
        assert!(!last.finished);
        assert!(last.error.as_deref().unwrap().starts_with("infrastructure: node node"), "{last:?}");
        assert!(last.nodes["node1"].error.is_some(), "{last:?}");

        // A worker at an address no machine answers.
        deployment.login = right;
        let mut ghost = deployment.topology.machines[1].clone();
        ghost.name = "ghost".into();
        ghost.ip = format!("{}.250", lab.nodes[0].host.rsplit_once('.').unwrap().0)
            .parse()
            .unwrap();
        deployment.topology.machines.push(ghost);
        let (_, report) = recorder();
        let missing = deploy(&deployment, &settings, DeployProgress::default(), report)
            .await
            .unwrap_err();
        assert!(
            matches!(&missing, DeployError::Node { phase: Phase::Infrastructure, error: NodeError::Unreachable { node, .. } } if node == "ghost"),
            "{missing:?}"
        );
        assert!(missing.is_transient());
        for node in 0..2 {
            assert_eq!(
                on_node(&lab, node, "ls /etc/kubernetes /root/.eggo 2>/dev/null | wc -l").await.trim(),
                "0",
                "nothing was put on {}",
                lab.nodes[node].name
            );
        }
    });
}

#[test]
fn a_deploy_stopped_halfway_resumes_where_it_stopped() {
    let lab = Lab::up(2);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let deployment = lab_deployment(&lab, &machines);
    let settings = DeploySettings::default();
    runtime().block_on(async {
        // Stopped (its future dropped, as when wasmco is killed) once the
        // control plane is being made.
        let (reports, report) = recorder();
        let reached = Arc::new(tokio::sync::Notify::new());
        let signal = reached.clone();
        let watching: Report = Arc::new(move |state: &DeployProgress| {
            report(state);
            if state.phase == Some(Phase::ControlPlane) {
                signal.notify_one();
            }
        });
        tokio::select! {
            outcome = deploy(&deployment, &settings, DeployProgress::default(), watching) => {
                panic!("the deploy finished before it was stopped: {outcome:?}")
            }
            () = reached.notified() => {}
        }
        let stopped = reports.lock().unwrap().last().cloned().unwrap();
        assert!(!stopped.finished);
        assert!(stopped.nodes["node1"].done.contains(&Phase::Etcd), "{stopped:?}");

        let (_, report) = recorder();
        let resumed = deploy(&deployment, &settings, stopped, report)
            .await
            .unwrap_or_else(|error| panic!("the resumed deploy failed: {error}"));
        assert!(resumed.finished);
        let ready = on_master(&lab, "kubectl get node node2 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'").await;
        assert_eq!(ready, "True");
    });
}
