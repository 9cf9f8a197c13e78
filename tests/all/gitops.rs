//! GitOps mode through a real `wasmco serve --cluster-repo`: a git
//! repository of Eggo deploy files, committed to as a platform team
//! would. Without machines: a bad file and a second file claiming the same
//! cluster are reported by field while nothing is made of them, a file
//! whose machines never answer is deployed once per commit (its failure
//! reported, not retried every poll), and the same repository served by
//! `git daemon` is fetched over `git://`. On the lab's machines
//! (tests/nodes/lab.sh): one cluster created, grown by a worker, upgraded
//! to the next Kubernetes and removed, by commits alone.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use wasmco_core::wire::{ClusterDeploymentState, GitOpsFile, GitOpsStatus};

use crate::cli::wasmco;
use crate::cluster_deploy::lab_support::lab::Lab;
use crate::cluster_deploy::lab_support::{self, deploy_file, output_of, output_with, script};
use crate::cluster_deploy::{addon_archive, closed_port, paper_file};
use crate::support::server::{Server, expect};
use crate::support::wait::eventually;

/// A repository a team commits deploy files to.
struct Repo {
    dir: PathBuf,
}

impl Repo {
    fn init(dir: &Path) -> Repo {
        std::fs::create_dir_all(dir).unwrap();
        let repo = Repo {
            dir: dir.to_owned(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=team", "-c", "user.email=team@example.com"])
            .args(args)
            .current_dir(&self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &self.dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Writes (or, with `None`, removes) `path` and commits; the commit.
    fn commit(&self, path: &str, text: Option<&str>, message: &str) -> String {
        let file = self.dir.join(path);
        match text {
            Some(text) => {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, text).unwrap();
                self.git(&["add", path]);
            }
            None => {
                self.git(&["rm", "-q", path]);
            }
        }
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

/// The status; the default one until the follower's first read is kept.
fn gitops(server: &Server) -> GitOpsStatus {
    let response = server.get("/v2/gitops");
    if response.status() == 404 {
        return GitOpsStatus::default();
    }
    serde_json::from_value(expect(response, 200)).expect("the GitOps status")
}

fn file<'a>(status: &'a GitOpsStatus, path: &str) -> Option<&'a GitOpsFile> {
    status.files.iter().find(|file| file.path == path)
}

/// Waits for the follower to have read `commit` and for `path`'s entry to
/// pass `ready`; the entry.
fn wait_file(
    server: &Server,
    what: &str,
    timeout: Duration,
    commit: &str,
    path: &str,
    ready: impl Fn(&GitOpsFile) -> bool,
) -> GitOpsFile {
    eventually(what, timeout, || {
        let status = gitops(server);
        match file(&status, path) {
            Some(entry) if status.commit.as_deref() == Some(commit) && ready(entry) => {
                Ok(entry.clone())
            }
            _ => Err(format!("{status:?}")),
        }
    })
}

#[test]
fn gitops_reports_bad_files_by_field_tries_each_commit_once_and_fetches_over_git() {
    let data = tempfile::tempdir().unwrap();
    let repo = Repo::init(&data.path().join("clusters"));
    let archive = addon_archive(data.path());
    let key_path = data.path().join("id_rsa");
    std::fs::write(&key_path, crate::cluster_deploy::a_key(data.path(), "k")).unwrap();
    let nobody = paper_file(
        &archive,
        &key_path,
        ["127.0.0.1", "127.0.0.2"],
        closed_port(),
    );
    repo.commit(
        "lab.yaml",
        Some(&nobody),
        "a cluster on machines that never answer",
    );
    repo.commit("same.yaml", Some(&nobody), "the same cluster-id again");
    let bad = nobody.replace("ip: 127.0.0.2", "ip: 127.0.0.300");
    let head = repo.commit(
        "teams/bad.yaml",
        Some(&bad.replace("cluster-id: lab-cluster", "cluster-id: bad")),
        "a machine at no address",
    );

    let repo_arg = format!("{}#main", repo.dir.display());
    let key_arg = key_path.display().to_string();
    let args = [
        "--cluster-repo",
        repo_arg.as_str(),
        "--cluster-repo-key",
        &key_arg,
        "--cluster-repo-poll",
        "1s",
    ];
    let server = Server::start_with(data.path(), &args);
    let timeout = Duration::from_secs(60);
    let bad_entry = wait_file(
        &server,
        "the bad file reported",
        timeout,
        &head,
        "teams/bad.yaml",
        |f| f.error.is_some(),
    );
    let error = bad_entry.error.unwrap();
    assert_eq!(error.field.as_deref(), Some("workers[0].ip"), "{error:?}");
    assert_eq!(error.commit, head);
    assert_eq!(bad_entry.cluster_deployment, None);
    // Two files claiming one cluster: neither is carried.
    for path in ["lab.yaml", "same.yaml"] {
        let claimed = wait_file(
            &server,
            "the duplicate reported",
            timeout,
            &head,
            path,
            |f| f.error.is_some(),
        );
        let error = claimed.error.unwrap();
        assert_eq!(error.field.as_deref(), Some("cluster-id"), "{error:?}");
        assert!(error.reason.contains("lab.yaml and same.yaml"), "{error:?}");
    }
    expect(
        server.get("/v2/cluster-providers/gitops/cluster-deployments/lab-cluster"),
        404,
    );
    expect(
        server.get("/v2/cluster-providers/gitops/cluster-deployments/bad"),
        404,
    );
    let head = repo.commit("same.yaml", None, "one file per cluster");

    // lab.yaml is deployed once for this commit; its machines never answer,
    // and the failure waits for the next commit.
    let failed = wait_file(
        &server,
        "the failed deploy reported",
        Duration::from_secs(120),
        &head,
        "lab.yaml",
        |f| f.state == Some(ClusterDeploymentState::Failed) && f.error.is_some(),
    );
    let started = failed.started.clone().expect("a deploy started");
    assert_eq!(
        (started.action.as_str(), started.commit.as_str()),
        ("deploy", head.as_str())
    );
    assert!(
        failed
            .error
            .as_ref()
            .unwrap()
            .reason
            .starts_with("the deploy failed"),
        "{failed:?}"
    );
    let ended = |server: &Server| {
        let status = expect(
            server.get("/v2/cluster-providers/gitops/cluster-deployments/lab-cluster/status"),
            200,
        );
        status["ended"].as_str().unwrap_or_default().to_owned()
    };
    let first_end = ended(&server);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        ended(&server),
        first_end,
        "a failed deploy is not run again every poll"
    );

    // The CLI shows each file's row.
    let table = wasmco(&[
        "--server",
        &server.base,
        "--token",
        &server.token,
        "cluster",
        "gitops",
    ]);
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("teams/bad.yaml") && text.contains("workers[0].ip"),
        "{text}"
    );
    assert!(text.contains(&head[..12]), "{text}");

    // A file removed while another cannot be read (it may be the removed
    // one under a new name): the cleanup waits for it.
    let removed = repo.commit("lab.yaml", None, "the cluster goes");
    let waiting = wait_file(
        &server,
        "the removal waiting",
        timeout,
        &removed,
        "lab.yaml",
        |f| f.removed && f.error.is_some(),
    );
    assert!(waiting.error.unwrap().reason.contains("teams/bad.yaml"));
    expect(
        server.get("/v2/cluster-providers/gitops/cluster-deployments/lab-cluster"),
        200,
    );
    // Once every file reads, the cluster is cleaned up (the cleanup of
    // machines that never answer then fails, and says so).
    let removed = repo.commit("teams/bad.yaml", None, "the typo goes too");
    let going = wait_file(
        &server,
        "the removal started",
        timeout,
        &removed,
        "lab.yaml",
        |f| f.removed && f.started.as_ref().is_some_and(|s| s.action == "cleanup"),
    );
    assert_eq!(going.cluster_deployment.as_deref(), Some("lab-cluster"));
    let removed = repo.commit(
        "teams/bad.yaml",
        Some(&bad.replace("cluster-id: lab-cluster", "cluster-id: bad")),
        "the typo is back",
    );
    drop(server);

    // The same repository over git://, from a second data directory.
    let daemon = GitDaemon::serve(data.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let remote = format!("git://127.0.0.1:{}/clusters#main", daemon.port);
    let server = Server::start_with(
        elsewhere.path(),
        &["--cluster-repo", &remote, "--cluster-repo-poll", "1s"],
    );
    let fetched = wait_file(
        &server,
        "the remote read",
        timeout,
        &removed,
        "teams/bad.yaml",
        |f| f.error.is_some(),
    );
    assert_eq!(
        fetched.error.unwrap().field.as_deref(),
        Some("workers[0].ip")
    );
    assert_eq!(gitops(&server).repo, remote.trim_end_matches("#main"));
}

#[test]
fn a_cluster_is_created_grown_upgraded_and_removed_by_commits() {
    // Built (when not cached) before this thread enters the lab's network.
    let current = output_of(&script("package.sh"));
    let next = output_with(&script("package.sh"), &["next"]);
    let lab = Lab::up(3);
    let data = tempfile::tempdir().unwrap();
    let repo = Repo::init(&data.path().join("clusters"));
    let repo_arg = repo.dir.display().to_string();
    let key = lab.file("id_rsa").display().to_string();
    let args = [
        "--cluster-repo",
        repo_arg.as_str(),
        "--cluster-repo-key",
        &key,
        "--cluster-repo-poll",
        "1s",
        "--probe-interval",
        "1s",
    ];
    let server = Server::start_with(data.path(), &args);
    let two: Vec<&wasmco_nodes::NodeAddress> = lab.nodes[..2].iter().collect();
    let three: Vec<&wasmco_nodes::NodeAddress> = lab.nodes.iter().collect();
    let path = "edge/lab.yaml";
    let long = Duration::from_secs(600);
    let reached = |commit: &str, what: &str| {
        wait_file(&server, what, long, commit, path, |f| {
            f.reached.as_deref() == Some(commit)
                && f.state == Some(ClusterDeploymentState::Deployed)
        })
    };
    let on_master =
        |script: &str| lab_support::runtime().block_on(lab_support::on_master(&lab, script));
    let versions = "kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.nodeInfo.kubeletVersion} {end}'";

    let created = repo.commit(
        path,
        Some(&deploy_file(&two, &current, &lab.file("id_rsa"))),
        "a cluster",
    );
    reached(&created, "the cluster deployed");
    expect(
        server.get("/v2/cluster-providers/gitops/clusters/lab-cluster"),
        200,
    );

    let grown = repo.commit(
        path,
        Some(&deploy_file(&three, &current, &lab.file("id_rsa"))),
        "a third machine",
    );
    let entry = reached(&grown, "the worker joined");
    assert_eq!(entry.started.map(|s| s.action), Some("join".to_owned()));
    let nodes = on_master(versions);
    assert!(nodes.contains("node3=v1.34"), "{nodes}");

    // A bad edit is reported by field; the cluster stays as it is.
    let broken = repo.commit(
        path,
        Some("cluster-id: lab-cluster\nmasters: 3\n"),
        "a typo",
    );
    let entry = wait_file(
        &server,
        "the typo reported",
        Duration::from_secs(60),
        &broken,
        path,
        |f| f.error.is_some(),
    );
    assert_eq!(entry.error.unwrap().field.as_deref(), Some("masters"));
    assert_eq!(entry.reached.as_deref(), Some(grown.as_str()));
    assert_eq!(entry.state, Some(ClusterDeploymentState::Deployed));

    let upgraded = repo.commit(
        path,
        Some(&deploy_file(&three, &next, &lab.file("id_rsa"))),
        "the next Kubernetes",
    );
    let entry = reached(&upgraded, "the cluster upgraded");
    assert_eq!(entry.started.map(|s| s.action), Some("upgrade".to_owned()));
    let nodes = on_master(versions);
    // The master runs no kubelet: the workers are the nodes.
    assert_eq!(nodes.matches("=v1.35").count(), 2, "{nodes}");
    assert!(!nodes.contains("=v1.34"), "{nodes}");
    let server_version = on_master("kubectl get --raw /version");
    assert!(server_version.contains("\"v1.35"), "{server_version}");

    let removed = repo.commit(path, None, "the cluster goes");
    eventually("the cluster removed", long, || {
        let status = gitops(&server);
        match (status.commit.as_deref(), file(&status, path)) {
            (Some(commit), None) if commit == removed => Ok(()),
            _ => Err(format!("{status:?}")),
        }
    });
    expect(
        server.get("/v2/cluster-providers/gitops/cluster-deployments/lab-cluster"),
        404,
    );
    expect(
        server.get("/v2/cluster-providers/gitops/clusters/lab-cluster"),
        404,
    );
    lab_support::runtime().block_on(lab_support::assert_nothing_left(&lab));
}

/// `git daemon` serving the repositories under `base` on a loopback port.
struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    fn serve(base: &Path) -> GitDaemon {
        let port = closed_port();
        let child = Command::new("git")
            .args([
                "daemon",
                "--export-all",
                "--reuseaddr",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts");
        eventually("git daemon listening", Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())
        });
        GitDaemon { child, port }
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
