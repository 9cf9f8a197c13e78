//! GitOps mode: how soon after a commit its change starts, and what one
//! read of the repository costs with many deploy files in it.
//!
//! `cargo bench -p wasmco --bench gitops`
//!
//! In this process: a sled store, a local git repository (made with the
//! `git` command, as a team would), and the follower on its own thread
//! polling every 2 s. Ten times, a commit adds a deploy file; the time
//! from the commit to its deploy having started is measured (its machines
//! are loopback ports nobody listens on, so each deploy then fails fast).
//! Then one read of the repository with 100 files whose clusters are all
//! where the files say (so nothing starts) is timed.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use wasmco::startup;
use wasmco_orchestrator::gitops::{self, GitOps, GitOpsOptions};

const POLL: Duration = Duration::from_secs(2);
const COMMITS: usize = 10;
const FILES: usize = 100;
const TARGET_SLACK: Duration = Duration::from_secs(2);

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A deploy file for one master on a loopback port nobody listens on.
fn deploy_file(name: &str, archive: &Path, port: u16) -> String {
    format!(
        "cluster-id: {name}\nusername: root\npassword: bench\nmasters:\n- name: {name}-m1\n  ip: 127.0.0.1\n  port: {port}\n\
         runtime: containerd\ninstall:\n  package-source:\n    type: tar.gz\n    srcpath:\n      amd64: {}\n",
        archive.display()
    )
}

/// Writes the `i`th cluster's deploy file into `repo`; the cluster's name.
fn add_file(repo: &Path, i: usize, archive: &Path, port: u16) -> String {
    let name = format!("c{i}");
    let file = repo.join(format!("{name}.yaml"));
    std::fs::write(file, deploy_file(&name, archive, port)).expect("the file is written");
    name
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn main() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let repo = data.path().join("clusters");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let archive = data.path().join("packages.tar.gz");
    std::fs::write(&archive, b"never unpacked: no machine answers").unwrap();
    let state =
        startup::open_state(&data.path().join("host"), None, Default::default()).expect("state");
    let options = GitOpsOptions {
        repo: format!("{}#main", repo.display())
            .parse()
            .expect("the repository"),
        provider: "gitops".to_owned(),
        private_key: None,
        poll: POLL,
        mirror: data.path().join("mirror"),
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "gitops bench (load before: {})",
        load.split_whitespace().next().unwrap_or("?")
    );
    GitOps::new(state.orchestrator.clone(), options.clone())
        .spawn()
        .expect("the follower");

    let port = closed_port();
    let mut latencies = Vec::new();
    for i in 0..COMMITS {
        let name = add_file(&repo, i, &archive, port);
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", &name]);
        let commit = git(&repo, &["rev-parse", "HEAD"]);
        let start = Instant::now();
        loop {
            let status = gitops::status(&state.db).ok().flatten().unwrap_or_default();
            let started = status.files.iter().any(|file| {
                file.cluster_deployment.as_deref() == Some(name.as_str())
                    && file.started.as_ref().is_some_and(|s| s.commit == commit)
            });
            if started {
                latencies.push(start.elapsed());
                break;
            }
            if let Some(error) = status.files.iter().find_map(|f| {
                f.error
                    .as_ref()
                    .filter(|_| f.path == format!("{name}.yaml"))
            }) {
                panic!("{name}.yaml refused: {error:?}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{name} never started: {status:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    let max = latencies[latencies.len() - 1];
    let bound = POLL + TARGET_SLACK;
    println!(
        "commit -> action started, poll {POLL:?}: p50 {:.2} s, max {:.2} s; target <= poll + 2 s = {:.1} s: {} (max/bound {:.2})",
        p50.as_secs_f64(),
        max.as_secs_f64(),
        bound.as_secs_f64(),
        if max <= bound { "met" } else { "MISSED" },
        max.as_secs_f64() / bound.as_secs_f64()
    );

    // One read with FILES files, every deployment Failed at its commit
    // already (nothing starts): what each poll costs at rest.
    for i in COMMITS..FILES {
        add_file(&repo, i, &archive, port);
    }
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "many"]);
    let settle = Instant::now();
    let follower = GitOps::new(state.orchestrator.clone(), options);
    while settle.elapsed() < Duration::from_secs(120) {
        let status = gitops::status(&state.db).ok().flatten().unwrap_or_default();
        let settled = status.files.len() == FILES
            && status
                .files
                .iter()
                .all(|f| f.state.is_some_and(|s| !s.is_running()));
        if settled {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let reads = 5;
    let start = Instant::now();
    for _ in 0..reads {
        follower.poll_once();
    }
    let per_read = start.elapsed() / reads;
    println!(
        "one read of {FILES} deploy files at rest: {:.1} ms ({:.3} of the {POLL:?} poll interval)",
        per_read.as_secs_f64() * 1e3,
        per_read.as_secs_f64() / POLL.as_secs_f64()
    );
}
