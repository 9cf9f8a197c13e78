//! A running cluster's machines changing, as Eggo's join and delete change
//! them, on the lab's real machines: a worker and a master join (the
//! master's etcd member through etcd's learner path), pods land on the
//! new worker, and both leave again (drained, their member removed) with
//! nothing of the cluster left on them.

mod support;

use std::time::Instant;

use support::lab::Lab;
use support::{deploy_file, on_master, on_node, output_of, recorder, runtime, script};
use wasmco_clusters::{
    DeployError, DeployProgress, DeploySettings, Deployment, deploy, join, remove_nodes,
};
use wasmco_core::eggo::{DeployConfig, HostConfig, JoinFile};
use wasmco_nodes::{NodeAddress, Secret};

fn host(node: &NodeAddress) -> HostConfig {
    HostConfig {
        name: node.name.clone(),
        ip: node.host.clone(),
        port: i64::from(node.port),
        arch: "amd64".into(),
    }
}

/// `config` prepared with what the cluster was made with.
fn prepared(config: &DeployConfig, made: &Deployment) -> Deployment {
    let key = std::fs::read_to_string(&config.private_key_path).expect("the key file");
    Deployment::prepare(config, Secret::PrivateKey(key), Some(made.material.clone()))
        .expect("a deployment")
}

const READY: &str = "kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}'";

#[test]
fn machines_join_a_running_cluster_and_leave_it_drained() {
    let lab = Lab::up(4);
    let archive = output_of(&script("package.sh"));
    let text = deploy_file(
        &[&lab.nodes[0], &lab.nodes[1]],
        &archive,
        &lab.file("id_rsa"),
    );
    let config = wasmco_core::eggo::parse(&text).expect("the deploy file parses");
    let made = support::deployment(&config);
    let settings = DeploySettings::default();
    let (_, report) = recorder();
    runtime().block_on(async {
        let state = deploy(&made, &settings, DeployProgress::default(), report.clone())
            .await
            .unwrap_or_else(|error| panic!("the deploy failed: {error}"));
        let node2_subnet = on_node(&lab, 1, "cat /etc/cni/net.d/10-wasmco-bridge.conflist | grep -o '10.244.[0-9]*.0/24'").await;

        // A worker joins: its kubelet bootstraps through the CSR API, the
        // other worker routes to its pods, and pods are scheduled there.
        let worker = JoinFile {
            workers: vec![host(&lab.nodes[2])],
            ..JoinFile::default()
        };
        let grown = prepared(&config.joined(&worker).expect("the worker joins the file"), &made);
        let started = Instant::now();
        let joined = join(&grown, &settings, state.clone(), report.clone(), &["node3".into()])
            .await
            .unwrap_or_else(|error| panic!("the worker's join failed: {error}"));
        eprintln!("worker joined in {:?}", started.elapsed());
        assert!(joined.finished, "{joined:?}");
        assert_eq!(on_master(&lab, READY).await.trim(), "node2=True node3=True");
        let node3_subnet = on_node(&lab, 2, "grep -o '10.244.[0-9]*.0/24' /etc/cni/net.d/10-wasmco-bridge.conflist").await;
        assert_ne!(node3_subnet.trim(), node2_subnet.trim(), "each node its own pod slice");
        let routes = on_node(&lab, 1, "ip route").await;
        assert!(routes.contains(node3_subnet.trim()), "node2 routes to node3's pods: {routes}");
        let sleeper = support::spread_sleeper(4);
        let placed = on_master(
            &lab,
            &format!(
                "echo '{sleeper}' | kubectl apply -f - >/dev/null && \
                 kubectl rollout status deployment/sleeper --timeout=150s >/dev/null && \
                 kubectl get pods -l app=sleeper -o jsonpath='{{range .items[*]}}{{.spec.nodeName}} {{end}}'"
            ),
        )
        .await;
        assert_eq!(placed.matches("node3").count(), 2, "{placed}");

        // A master joins: etcd gets a second voting member, and its own
        // API server answers.
        let master = JoinFile {
            masters: vec![host(&lab.nodes[3])],
            ..JoinFile::default()
        };
        let grown_config = config.joined(&worker).unwrap().joined(&master).expect("the master joins the file");
        let bigger = prepared(&grown_config, &grown);
        let joined = join(&bigger, &settings, joined, report.clone(), &["node4".into()])
            .await
            .unwrap_or_else(|error| panic!("the master's join failed: {error}"));
        assert!(joined.finished);
        let members = on_master(&lab, &format!("{} member list", ETCDCTL)).await;
        assert_eq!(members.matches(", started, ").count(), 2, "{members}");
        assert_eq!(members.matches(", false").count(), 2, "both vote: {members}");
        let readyz = on_node(&lab, 3, "kubectl --server https://127.0.0.1:6443 get --raw /readyz").await;
        assert_eq!(readyz.trim(), "ok");

        // The first master cannot leave; the others can.
        let refused = remove_nodes(&bigger, &settings, joined.clone(), report.clone(), &["node1".into()])
            .await
            .unwrap_err();
        assert!(matches!(&refused, DeployError::Refused(problems) if problems[0].reason.contains("first master")), "{refused}");

        // The worker leaves drained: its pods go to node2, its Node goes,
        // node2 forgets the route, nothing of the cluster stays on it.
        let started = Instant::now();
        let left = remove_nodes(&bigger, &settings, joined, report.clone(), &["node3".into(), "node4".into()])
            .await
            .unwrap_or_else(|error| panic!("the delete failed: {error}"));
        eprintln!("two machines left in {:?}", started.elapsed());
        assert!(left.finished);
        assert_eq!(on_master(&lab, READY).await.trim(), "node2=True");
        let moved = on_master(
            &lab,
            "kubectl rollout status deployment/sleeper --timeout=150s >/dev/null && \
             kubectl get pods -l app=sleeper --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.spec.nodeName} {end}'",
        )
        .await;
        assert_eq!(moved.split_whitespace().collect::<Vec<_>>(), ["node2"; 4], "{moved}");
        let routes = on_node(&lab, 1, "ip route").await;
        assert!(!routes.contains(node3_subnet.trim()), "{routes}");
        let members = on_master(&lab, &format!("{} member list", ETCDCTL)).await;
        assert_eq!(members.lines().count(), 1, "{members}");
        for node in [2, 3] {
            let left = on_node(&lab, node, support::LEFT_BEHIND).await;
            assert_eq!(left.trim(), "", "{} after it left", lab.nodes[node].name);
        }

        // A machine at an address nothing answers on (mistyped) fails its
        // join before anything changed, and still leaves again.
        let mut ghost = host(&lab.nodes[2]);
        ghost.name = "ghost".into();
        ghost.ip = format!("{}.250", lab.nodes[0].host.rsplit_once('.').unwrap().0);
        let haunted_config = grown_config
            .without(&["node3".into(), "node4".into()])
            .joined(&JoinFile { workers: vec![ghost], ..JoinFile::default() })
            .unwrap();
        let mut material = bigger.material.clone();
        material.forget(&["node3".into(), "node4".into()]);
        let key = std::fs::read_to_string(&config.private_key_path).unwrap();
        let haunted = Deployment::prepare(&haunted_config, Secret::PrivateKey(key), Some(material)).unwrap();
        let impatient = DeploySettings {
            session: wasmco_nodes::SessionSettings {
                connect_timeout: std::time::Duration::from_secs(3),
                ..Default::default()
            },
            ..DeploySettings::default()
        };
        let failed = join(&haunted, &impatient, left.clone(), report.clone(), &["ghost".into()])
            .await
            .unwrap_err();
        assert!(failed.to_string().contains("ghost"), "{failed}");
        let gone = remove_nodes(&haunted, &impatient, left, report.clone(), &["ghost".into()])
            .await
            .unwrap_or_else(|error| panic!("the ghost's delete failed: {error}"));
        assert!(gone.finished);
        let said = gone.nodes["ghost"].error.clone().unwrap_or_default();
        assert!(said.contains("without its own cleanup"), "{said}");
        assert_eq!(on_master(&lab, READY).await.trim(), "node2=True");
    });
}

const ETCDCTL: &str = "ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 \
    --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \
    --key=/etc/kubernetes/pki/etcd/healthcheck-client.key";
