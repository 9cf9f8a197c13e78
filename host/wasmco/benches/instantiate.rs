//! Instantiate at scale: 10 apps x N clusters x 5 resources, generic
//! placement plus one gac action, from the request to a context ready for
//! sync; peak memory and store size. Each N runs in its own process so its
//! peak RSS is its own (100,000 clusters take a minute to set up).
//!
//! `cargo bench -p wasmco --bench instantiate`

use std::process::Command;
use std::time::Instant;

mod support;

use support::{APPS, RESOURCES};
use wasmco::startup;

/// Seconds and peak MB each size is held to: up to 10,000 clusters the
/// first targets set, at 100,000 those of the fleet-scale issue.
fn targets(clusters: usize) -> (f64, f64) {
    if clusters > 10_000 {
        (2.0, 1024.0)
    } else {
        (1.0, 300.0)
    }
}

/// Builds the inputs for `clusters` clusters and instantiates once.
fn run(clusters: usize) {
    let data = tempfile::tempdir().expect("temp dir");
    let state = startup::open_state(data.path(), None, Default::default()).expect("state");
    let db = &state.db;
    let dig = support::approved_dig_at_scale(&state, clusters);

    let started = Instant::now();
    state
        .orchestrator
        .instantiate(&dig, wasmco_orchestrator::Actor::Admin)
        .expect("instantiate");
    let took = started.elapsed().as_secs_f64();

    let mut context_bytes = 0usize;
    db.store()
        .visit_prefix(b"ctx/", &mut |k, v| context_bytes += k.len() + v.len())
        .expect("scan");
    let on_disk = db.store().size_on_disk().expect("size");
    let (_, context) = state.orchestrator.context(&dig, None).expect("context");
    let placed: usize = context.apps.iter().map(|a| a.placement.len()).sum();
    let differing: usize = context.apps.iter().map(|a| a.diffs.len()).sum();
    // What the edit budget adds: one walk of each manifest an edit
    // produced (here every manifest of the context is walked, an upper
    // bound), timed on its own.
    let manifests: Vec<&serde_json::Value> = context
        .apps
        .iter()
        .flat_map(|app| {
            app.base.iter().map(|r| &r.manifest).chain(
                app.diffs
                    .values()
                    .flatten()
                    .filter_map(|(_, r)| r.as_ref().map(|r| &r.manifest)),
            )
        })
        .collect();
    let walked = Instant::now();
    for manifest in &manifests {
        wasmco_orchestrator::budget::measure(manifest, usize::MAX).expect("within bounds");
    }
    let budget_share = walked.elapsed().as_secs_f64() / took;
    let rss_mb = peak_rss_kb() as f64 / 1024.0;
    let (target_seconds, target_mb) = targets(clusters);
    println!(
        "  {clusters:>6} clusters: {:>8.1} ms ({:.2}x the {target_seconds} s target)  peak RSS {rss_mb:>6.1} MB ({:.2}x the {target_mb} MB target)  \
         context {:>7.1} KiB of keys and values, store {:>6.1} MiB on disk ({placed} placements, {differing} differing clusters); \
         budget walks {:.2}% of it (target < 5%)",
        took * 1e3,
        took / target_seconds,
        rss_mb / target_mb,
        context_bytes as f64 / 1024.0,
        on_disk as f64 / (1024.0 * 1024.0),
        budget_share * 100.0,
    );
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    if let Some(n) = std::env::args()
        .skip(1)
        .find_map(|a| a.strip_prefix("--clusters=").map(str::to_owned))
    {
        run(n.parse().expect("cluster count"));
        return;
    }
    println!(
        "instantiate, {APPS} apps x N clusters x {RESOURCES} resources, generic placement + gac (load {}):",
        support::load_average()
    );
    let me = std::env::current_exe().expect("own path");
    for clusters in [100, 1_000, 10_000, 100_000] {
        let status = Command::new(&me)
            .arg(format!("--clusters={clusters}"))
            .status()
            .expect("run");
        assert!(status.success(), "{clusters} clusters failed");
    }
}
