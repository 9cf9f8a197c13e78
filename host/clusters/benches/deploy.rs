//! How long a cluster deploy takes on machines made on this host
//! (tests/nodes/lab.sh), the binaries and images already built and packed:
//! one master and two workers until every Node is Ready (target: 3
//! minutes), and one master with four workers against one master with
//! one (target: 1.5x), the workers being set up side by side; then a
//! worker's join (target: 60 s), a rolling upgrade of the three machines
//! to the next Kubernetes (target: 5 minutes), the worker's delete, and a
//! cleanup (target: 30 s).
//!
//! `cargo bench -p wasmco-clusters --bench deploy` (as root, like the tests).

// The tests' lab and deploy file.
#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::lab::Lab;
use support::{lab_deployment, runtime};
use wasmco_clusters::{
    DeployProgress, DeploySettings, Deployment, Phase, Report, cleanup, deploy, join, remove_nodes,
    upgrade,
};
use wasmco_core::eggo::{HostConfig, JoinFile};
use wasmco_nodes::{NodeAddress, Secret};

/// Deploys a master and `workers` workers on a fresh lab; the time from
/// the first SSH connection to every Node Ready. Prints when each phase
/// began.
fn deploy_time(workers: usize) -> Duration {
    let lab = Lab::up(1 + workers);
    let machines: Vec<&NodeAddress> = lab.nodes.iter().collect();
    let deployment = lab_deployment(&lab, &machines);
    let started = Instant::now();
    let phases = Arc::new(Mutex::new(Vec::<(Phase, Duration)>::new()));
    let seen = phases.clone();
    let report: Report = Arc::new(move |state: &DeployProgress| {
        let mut phases = seen.lock().unwrap();
        if let Some(phase) = state.phase
            && phases.last().is_none_or(|(last, _)| *last != phase)
        {
            phases.push((phase, started.elapsed()));
        }
    });
    let elapsed = runtime().block_on(async {
        deploy(
            &deployment,
            &DeploySettings::default(),
            DeployProgress::default(),
            report,
        )
        .await
        .unwrap_or_else(|error| panic!("the deploy of {workers} workers failed: {error}"));
        started.elapsed()
    });
    let began: Vec<String> = phases
        .lock()
        .unwrap()
        .iter()
        .map(|(phase, at)| format!("{phase} {:.1}s", at.as_secs_f64()))
        .collect();
    println!(
        "  {workers} worker(s), phases began at: {}",
        began.join(", ")
    );
    elapsed
}

/// How long each step of a cluster's life took.
struct Lifecycle {
    join: Duration,
    upgrade: Duration,
    delete: Duration,
    cleanup: Duration,
}

/// On a fresh lab: a master and a worker deployed, then a second worker's
/// join, a rolling upgrade of the three machines to tests/kube-next's
/// Kubernetes, the second worker's delete (drained) and the cleanup of the
/// whole cluster, each timed from its first SSH connection to its end.
fn lifecycle_times() -> Lifecycle {
    let next = support::output_with(&support::script("package.sh"), &["next"]);
    let lab = Lab::up(3);
    let made = lab_deployment(&lab, &[&lab.nodes[0], &lab.nodes[1]]);
    let settings = DeploySettings::default();
    let (_, report) = support::recorder();
    let joiner = &lab.nodes[2];
    let join_file = JoinFile {
        workers: vec![HostConfig {
            name: joiner.name.clone(),
            ip: joiner.host.clone(),
            port: i64::from(joiner.port),
            arch: "amd64".into(),
        }],
        ..JoinFile::default()
    };
    let grown_config = made
        .config
        .joined(&join_file)
        .expect("the worker joins the file");
    let mut upgraded_config = grown_config.clone();
    if let Some(source) = upgraded_config.install.package_source.as_mut() {
        source.srcpath.insert("amd64".into(), next);
    }
    let key = std::fs::read_to_string(&made.config.private_key_path).expect("the key");
    let with_material = |config, material| {
        Deployment::prepare(config, Secret::PrivateKey(key.clone()), Some(material))
            .expect("a deployment")
    };
    runtime().block_on(async {
        let state = deploy(&made, &settings, DeployProgress::default(), report.clone())
            .await
            .expect("the deploy");
        let grown = with_material(&grown_config, made.material.clone());
        let joining = [joiner.name.clone()];
        let started = Instant::now();
        let state = join(&grown, &settings, state, report.clone(), &joining)
            .await
            .expect("the join");
        let join_time = started.elapsed();
        let upgraded = with_material(&upgraded_config, grown.material.clone());
        let started = Instant::now();
        let state = upgrade(&upgraded, &settings, state, report.clone())
            .await
            .expect("the upgrade");
        let upgrade_time = started.elapsed();
        let started = Instant::now();
        let state = remove_nodes(&upgraded, &settings, state, report.clone(), &joining)
            .await
            .expect("the delete");
        let delete_time = started.elapsed();
        let started = Instant::now();
        cleanup(&made, &settings, state, report)
            .await
            .expect("the cleanup");
        Lifecycle {
            join: join_time,
            upgrade: upgrade_time,
            delete: delete_time,
            cleanup: started.elapsed(),
        }
    })
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|line| line.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: nothing to time.
    if !std::env::args().any(|argument| argument == "--bench") {
        return;
    }
    println!("load average before: {}", load());
    let three = deploy_time(2);
    println!(
        "deploy, 1 master + 2 workers to all Ready: {:.1} s (target <= 180 s) {}",
        three.as_secs_f64(),
        verdict(three.as_secs_f64() <= 180.0)
    );
    let one = deploy_time(1);
    let four = deploy_time(4);
    let ratio = four.as_secs_f64() / one.as_secs_f64();
    println!(
        "deploy, 1 master + 1 worker: {:.1} s; + 4 workers: {:.1} s; 4 workers / 1 worker: {ratio:.2}x (target <= 1.5x) {}",
        one.as_secs_f64(),
        four.as_secs_f64(),
        verdict(ratio <= 1.5)
    );
    let times = lifecycle_times();
    let seconds = |time: Duration| time.as_secs_f64();
    println!(
        "join of one worker to Ready: {:.1} s (target <= 60 s) {}",
        seconds(times.join),
        verdict(seconds(times.join) <= 60.0)
    );
    println!(
        "rolling upgrade of 1 master + 2 workers to the next minor version: {:.1} s (target <= 300 s) {}",
        seconds(times.upgrade),
        verdict(seconds(times.upgrade) <= 300.0)
    );
    println!(
        "delete of one worker, drained: {:.1} s",
        seconds(times.delete)
    );
    println!(
        "cleanup of 1 master + 1 worker: {:.1} s (target <= 30 s) {}",
        seconds(times.cleanup),
        verdict(seconds(times.cleanup) <= 30.0)
    );
    println!("load average after: {}", load());
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT MET" }
}
