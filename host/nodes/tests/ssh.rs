//! The node task manager against real sshd nodes (tests/nodes/lab.sh).

mod lab;

use std::future::Future;
use std::time::{Duration, Instant};

use lab::Lab;
use wasmco_nodes::{
    Command, Copied, FileCopy, HostKeyPolicy, Login, NodeAddress, NodeError, NodeSession,
    SessionSettings, on_each,
};

fn in_lab<F, Fut>(count: usize, test: F)
where
    F: FnOnce(Lab) -> Fut,
    Fut: Future<Output = ()>,
{
    let lab = Lab::up(count);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(test(lab));
}

async fn connect(lab: &Lab, node: usize, login: &Login) -> Result<NodeSession, NodeError> {
    NodeSession::connect(
        &lab.nodes[node],
        login,
        &HostKeyPolicy::FirstContact,
        &quick(),
    )
    .await
}

fn quick() -> SessionSettings {
    SessionSettings {
        connect_timeout: Duration::from_secs(3),
        grace: Duration::from_secs(1),
        ..SessionSettings::default()
    }
}

fn step(script: &str) -> Command {
    Command::new("test step", script, Duration::from_secs(20))
}

#[test]
fn every_login_kind_runs_commands_on_its_own_node() {
    in_lab(1, |lab| async move {
        for login in [
            lab.key_login("id_ed25519"),
            lab.key_login("id_rsa"),
            lab.password_login(),
        ] {
            let session = connect(&lab, 0, &login).await.expect("logged in");
            let output = session.check(&step("hostname; id -u")).await.unwrap();
            assert_eq!(output.stdout, "node1\n0\n", "{:?}", login.secret);
            session.close().await;
        }
    });
}

#[test]
fn a_failed_step_is_named_with_its_status_and_stderr() {
    in_lab(1, |lab| async move {
        let session = connect(&lab, 0, &lab.key_login("id_ed25519"))
            .await
            .unwrap();
        let output = session.run(&step("echo out; echo oops >&2; exit 3")).await;
        let output = output.expect("a non-zero status is an output");
        assert_eq!((output.status, output.stdout.as_str()), (3, "out\n"));
        let failed = session
            .check(&Command::new(
                "start etcd",
                "echo 'no etcd' >&2; exit 4",
                Duration::from_secs(5),
            ))
            .await
            .unwrap_err();
        assert!(
            matches!(&failed, NodeError::Failed { node, step, status: 4, stderr }
                if node == "node1" && step == "start etcd" && stderr == "no etcd"),
            "{failed:?}"
        );
        assert_eq!(
            failed.to_string(),
            "node node1: start etcd failed with status 4: no etcd"
        );
    });
}

#[test]
fn a_refused_login_names_the_node_and_user() {
    in_lab(1, |lab| async move {
        let mut wrong = lab.password_login();
        wrong.secret = wasmco_nodes::Secret::Password("not-the-password".into());
        let refused = connect(&lab, 0, &wrong).await.unwrap_err();
        assert!(
            matches!(&refused, NodeError::LoginRefused { node, user, method: "password" }
                if node == "node1" && user == "root"),
            "{refused:?}"
        );
        assert!(!refused.is_transient());

        let mut stranger = lab.key_login("id_ed25519");
        stranger.user = "nobody-here".into();
        let refused = connect(&lab, 0, &stranger).await.unwrap_err();
        assert!(
            matches!(refused, NodeError::LoginRefused { .. }),
            "{refused:?}"
        );

        let garbage = Login {
            user: "root".into(),
            secret: wasmco_nodes::Secret::PrivateKey("not a key".into()),
        };
        let unreadable = connect(&lab, 0, &garbage).await.unwrap_err();
        assert!(matches!(unreadable, NodeError::BadKey(_)), "{unreadable:?}");
    });
}

#[test]
fn the_host_key_is_learnt_once_and_pinned_after() {
    in_lab(2, |lab| async move {
        let login = lab.key_login("id_ed25519");
        let first = connect(&lab, 0, &login).await.unwrap();
        let learnt = first.host_key().to_owned();
        let from_file = HostKeyPolicy::Pinned(lab.host_key("node1"))
            .pinned_fingerprint()
            .unwrap();
        assert_eq!(learnt, from_file, "the key the node showed is its own");
        first.close().await;

        for pin in [learnt.clone(), lab.host_key("node1")] {
            let pinned = HostKeyPolicy::Pinned(pin);
            NodeSession::connect(&lab.nodes[0], &login, &pinned, &quick())
                .await
                .expect("the pinned key is accepted")
                .close()
                .await;
        }

        // node2's key pinned for node1: another machine at node1's address.
        let impostor = HostKeyPolicy::Pinned(lab.host_key("node2"));
        let refused = NodeSession::connect(&lab.nodes[0], &login, &impostor, &quick())
            .await
            .unwrap_err();
        match refused {
            NodeError::HostKeyMismatch {
                node,
                expected,
                found,
            } => {
                assert_eq!(node, "node1");
                assert_eq!(found, learnt);
                assert_eq!(Some(expected), impostor.pinned_fingerprint());
            }
            other => panic!("expected a host key mismatch, got {other:?}"),
        }
    });
}

#[test]
fn a_step_past_its_deadline_is_stopped_on_the_node() {
    in_lab(1, |lab| async move {
        let session = connect(&lab, 0, &lab.key_login("id_ed25519"))
            .await
            .unwrap();
        let started = Instant::now();
        // Ignores SIGTERM, so only the kill after the grace ends it.
        let stubborn = Command::new(
            "wait for kubelet",
            "trap '' TERM; sleep 41.5",
            Duration::from_secs(1),
        );
        let timed_out = session.run(&stubborn).await.unwrap_err();
        assert!(
            matches!(&timed_out, NodeError::TimedOut { step, after, .. }
                if step == "wait for kubelet" && *after == Duration::from_secs(1)),
            "{timed_out:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let left = session
            .run(&step("ps -eo pid,pgid,args | grep 'sleep 4[1]' || true"))
            .await
            .unwrap();
        assert_eq!(left.stdout, "", "the step's process is gone from the node");
    });
}

#[test]
fn files_land_whole_once_and_only_inside_the_allow_list() {
    in_lab(2, |lab| async move {
        let session = connect(&lab, 0, &lab.key_login("id_ed25519"))
            .await
            .unwrap();
        let key = FileCopy {
            path: "/etc/kubernetes/pki/wasmco-test-apiserver.key".into(),
            contents: b"-----BEGIN PRIVATE KEY-----\n".to_vec(),
            mode: 0o600,
        };
        assert_eq!(session.put(&key).await.unwrap(), Copied::Written);
        assert_eq!(session.put(&key).await.unwrap(), Copied::Unchanged);
        let on_node = session
            .check(&step(&format!(
                "stat -c %a {0}; cat {0}; ls -A /etc/kubernetes/pki",
                key.path
            )))
            .await
            .unwrap();
        assert_eq!(
            on_node.stdout, "600\n-----BEGIN PRIVATE KEY-----\nwasmco-test-apiserver.key\n",
            "mode kept, contents whole, no partial file left"
        );
        assert_eq!(
            session.read(&key.path).await.unwrap().as_deref(),
            Some(key.contents.as_slice())
        );
        assert_eq!(session.read("/etc/kubernetes/none").await.unwrap(), None);

        let wider = FileCopy {
            mode: 0o644,
            ..key.clone()
        };
        assert_eq!(session.put(&wider).await.unwrap(), Copied::Written);
        let changed = FileCopy {
            contents: b"other".to_vec(),
            ..wider.clone()
        };
        assert_eq!(session.put(&changed).await.unwrap(), Copied::Written);

        assert!(
            !std::path::Path::new(&key.path).exists(),
            "the file is on the node, not on the test host"
        );
        let other = connect(&lab, 1, &lab.key_login("id_ed25519"))
            .await
            .unwrap();
        assert_eq!(other.read(&key.path).await.unwrap(), None, "nor on node2");

        for outside in [
            "/etc/passwd",
            "/etc/kubernetes/../passwd",
            "/usr/bin",
            "etc/kubernetes/x",
            "/tmpx/file",
        ] {
            let refused = session
                .put(&FileCopy {
                    path: outside.into(),
                    ..key.clone()
                })
                .await
                .unwrap_err();
            assert!(
                matches!(&refused, NodeError::PathRefused { path, .. } if path == outside),
                "{outside}: {refused:?}"
            );
        }
    });
}

#[test]
fn an_unreachable_node_is_named_and_transient() {
    in_lab(1, |lab| async move {
        let login = lab.key_login("id_ed25519");
        let closed_port = NodeAddress {
            port: 2222,
            ..lab.nodes[0].clone()
        };
        let silent = NodeAddress {
            name: "ghost".into(),
            // An address in the lab's subnet that no node has.
            host: lab.nodes[0].host.rsplit_once('.').unwrap().0.to_owned() + ".250",
            port: 22,
        };
        for address in [closed_port, silent] {
            let started = Instant::now();
            let error =
                NodeSession::connect(&address, &login, &HostKeyPolicy::FirstContact, &quick())
                    .await
                    .unwrap_err();
            assert!(
                matches!(&error, NodeError::Unreachable { node, .. } if *node == address.name),
                "{error:?}"
            );
            assert!(error.is_transient());
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "{:?}",
                started.elapsed()
            );
        }
    });
}

#[test]
fn nodes_are_worked_on_side_by_side() {
    in_lab(3, |lab| async move {
        let login = lab.key_login("id_ed25519");
        let started = Instant::now();
        let names = on_each(&lab.nodes, 3, |address| {
            let login = login.clone();
            async move {
                let session =
                    NodeSession::connect(address, &login, &HostKeyPolicy::FirstContact, &quick())
                        .await?;
                let output = session.check(&step("sleep 1; hostname")).await?;
                session.close().await;
                Ok::<_, NodeError>(output.stdout.trim().to_owned())
            }
        })
        .await;
        let names: Vec<String> = names.into_iter().map(Result::unwrap).collect();
        assert_eq!(names, ["node1", "node2", "node3"]);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    });
}
