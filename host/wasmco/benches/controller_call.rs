//! Cost of calling a controller in the sandbox against the same logic
//! compiled natively, measured in one run.
//!
//! `cargo bench -p wasmco --bench controller_call`
//!
//! Two flags, after `--`, for work on the controller itself:
//! `--against=OTHER.wasm` times another build of generic placement
//! interleaved with the built-in one and native code (an A/B in one run);
//! `--only=native|sandboxed|instantiate` repeats one side 20,000 times, to
//! run under `perf record` (with `WASMCO_PROFILE=perfmap`).
//!
//! Workload: generic placement of 10 apps over 1,000 clusters (3 labels and
//! 2 key/value pairs each); every app has an allOf by label, an anyOf by
//! label and an allOf by name.

mod support;

use std::time::{Duration, Instant};

use wasmco_orchestrator::draft::{AppDraft, ClusterInfo, DraftContext};
use wasmco_runtime::contract as host;
use wasmco_runtime::{ControllerKind, LimitOverrides, Runtime, RuntimeConfig};

const CLUSTERS: usize = 1_000;
const APPS: usize = 10;

struct Workload {
    intent: String,
    draft: DraftContext,
}

fn workload() -> Workload {
    let clusters = (0..CLUSTERS)
        .map(|i| ClusterInfo {
            provider: "edge".to_owned(),
            name: format!("edge-cluster-{i:04}"),
            labels: vec![
                "edge".to_owned(),
                format!("region-{}", i % 10),
                format!("zone-{}", i % 50),
            ],
            kv: vec![
                ("cpu".to_owned(), format!("{}", 8 + i % 56)),
                ("memory".to_owned(), format!("{}Gi", 16 + i % 240)),
            ],
        })
        .collect();
    let apps: Vec<String> = (0..APPS).map(|i| format!("app-{i}")).collect();
    let app_intents: Vec<serde_json::Value> = apps
        .iter()
        .enumerate()
        .map(|(i, app)| {
            serde_json::json!({"app": app, "intent": {
            "allOf": [
                {"clusterProvider": "edge", "clusterLabel": format!("region-{i}")},
                {"clusterProvider": "edge", "cluster": format!("edge-cluster-{:04}", 997 - i)}
            ],
            "anyOf": [
                {"clusterProvider": "edge", "clusterLabel": format!("zone-{}", (i * 7 + 1) % 50)},
                {"clusterProvider": "edge", "clusterLabel": format!("zone-{}", (i * 7 + 2) % 50)}
            ]}})
        })
        .collect();
    Workload {
        intent: serde_json::json!({ "appIntents": app_intents }).to_string(),
        draft: DraftContext::new(
            apps.into_iter()
                .map(|a| AppDraft::new(a, Vec::new()))
                .collect(),
            clusters,
        ),
    }
}

/// The same request in the plugin's own (natively compiled) binding types.
fn native_request(request: &host::PlacementRequest) -> generic_placement::PlacementRequest {
    use generic_placement as g;
    g::PlacementRequest {
        strings: g::Strings {
            data: request.strings.data.clone(),
            ends: request.strings.ends.clone(),
        },
        intent: request.intent.clone(),
        apps: request.apps.clone(),
        clusters: g::ClusterTable {
            provider: request.clusters.provider.clone(),
            name: request.clusters.name.clone(),
            label_start: request.clusters.label_start.clone(),
            labels: request.clusters.labels.clone(),
            kv_start: request.clusters.kv_start.clone(),
            kv_key: request.clusters.kv_key.clone(),
            kv_value: request.clusters.kv_value.clone(),
        },
        current: Vec::new(),
        nodes: g::bindings::wasmco::controller::types::NodeTable {
            node_start: Vec::new(),
            name: Vec::new(),
            label_start: Vec::new(),
            label_key: Vec::new(),
            label_value: Vec::new(),
            resource_start: Vec::new(),
            resource: Vec::new(),
            amount: Vec::new(),
        },
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn measure(iterations: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..iterations / 10 {
        f();
    }
    median(
        (0..iterations)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn micros(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

/// The value of `--name=value` among the arguments.
fn flag(name: &str) -> Option<String> {
    std::env::args().find_map(|arg| {
        arg.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
            .map(str::to_owned)
    })
}

fn main() {
    let cache = tempfile::tempdir().expect("temp dir");
    let runtime = Runtime::new(RuntimeConfig::new(cache.path())).expect("runtime");
    let wasm = wasmco_runtime::builtin::builtin("generic-placement")
        .expect("built in")
        .wasm;
    let controller = runtime
        .load(
            "generic-placement",
            ControllerKind::Placement,
            wasm,
            &LimitOverrides::default(),
        )
        .expect("loads");
    let work = workload();
    let host_req = work.draft.placement_request(work.intent.clone());
    let native_req = native_request(&host_req);

    // The scans take other vector paths in the guest than natively: the
    // two must agree edit for edit, not only in number.
    let wasm_edits: Vec<_> = controller
        .place(&host_req)
        .expect("wasm call")
        .value
        .into_iter()
        .map(|edit| match edit {
            host::PlacementEdit::Place(p) => (p.app, p.clusters, p.group),
            host::PlacementEdit::Unplace(u) => panic!("unplaces {}", u.app),
        })
        .collect();
    let native_edits: Vec<_> = generic_placement::place(&native_req)
        .expect("native call")
        .into_iter()
        .map(|edit| match edit {
            generic_placement::PlacementEdit::Place(p) => (p.app, p.clusters, p.group),
            generic_placement::PlacementEdit::Unplace(u) => panic!("unplaces {}", u.app),
        })
        .collect();
    assert_eq!(wasm_edits, native_edits, "wasm and native disagree");
    let wasm_edits = wasm_edits.len();

    if let Some(other) = flag("--against") {
        let other = std::fs::read(&other).unwrap_or_else(|e| panic!("{other}: {e}"));
        let other = runtime
            .load(
                "against",
                ControllerKind::Placement,
                &other,
                &LimitOverrides::default(),
            )
            .expect("loads the other build");
        let mut samples = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..3_000 {
            let start = Instant::now();
            std::hint::black_box(generic_placement::place(std::hint::black_box(&native_req)).ok());
            samples[0].push(start.elapsed());
            for (side, controller) in [(1, &controller), (2, &other)] {
                let start = Instant::now();
                std::hint::black_box(controller.place(std::hint::black_box(&host_req)).ok());
                samples[side].push(start.elapsed());
            }
        }
        let [native, built_in, other] = samples.map(median);
        let ratio = |d: Duration| d.as_secs_f64() / native.as_secs_f64();
        println!(
            "native {}, built-in {} ({:.3}x), other {} ({:.3}x)",
            micros(native),
            micros(built_in),
            ratio(built_in),
            micros(other),
            ratio(other)
        );
        return;
    }
    if let Some(side) = flag("--only") {
        for _ in 0..20_000 {
            match side.as_str() {
                "native" => {
                    std::hint::black_box(generic_placement::place(&native_req).ok());
                }
                "instantiate" => controller.instantiate().expect("instantiates"),
                "sandboxed" => {
                    std::hint::black_box(controller.place(&host_req).ok());
                }
                other => panic!("--only={other}: expected native, sandboxed or instantiate"),
            }
        }
        return;
    }

    // Interleaved, so both see the same machine (this one shares its cores).
    let iterations = 1_000;
    let (mut native_samples, mut sandboxed_samples) = (Vec::new(), Vec::new());
    for i in 0..iterations + iterations / 10 {
        let start = Instant::now();
        std::hint::black_box(generic_placement::place(std::hint::black_box(&native_req)).ok());
        let native = start.elapsed();
        let start = Instant::now();
        std::hint::black_box(controller.place(std::hint::black_box(&host_req)).ok());
        let sandboxed = start.elapsed();
        if i >= iterations / 10 {
            native_samples.push(native);
            sandboxed_samples.push(sandboxed);
        }
    }
    let native = median(native_samples);
    let sandboxed = median(sandboxed_samples);
    let mut lowering_only = host_req.clone();
    lowering_only.intent = r#"{"appIntents": []}"#.to_owned();
    let lowering = measure(iterations, || {
        std::hint::black_box(controller.place(std::hint::black_box(&lowering_only)).ok());
    });
    let instantiate = measure(2_000, || {
        controller.instantiate().expect("instantiates");
    });
    let cached_load = measure(50, || {
        runtime
            .load(
                "generic-placement",
                ControllerKind::Placement,
                wasm,
                &LimitOverrides::default(),
            )
            .expect("loads");
    });

    println!(
        "generic placement, {APPS} apps x {CLUSTERS} clusters ({} edits), pooling allocator: {}",
        wasm_edits,
        runtime.uses_pooling_allocator()
    );
    println!("  native median:             {}", micros(native));
    println!("  sandboxed call median:     {}", micros(sandboxed));
    println!(
        "  ratio sandboxed/native:    {:.2} (target <= 1.5)",
        sandboxed.as_secs_f64() / native.as_secs_f64()
    );
    println!(
        "  sandbox's own time:        {} a call (sandboxed median less native)",
        micros(sandboxed.saturating_sub(native))
    );
    println!(
        "  call with no app intents:  {} (instantiation + passing 1,000 clusters in)",
        micros(lowering)
    );
    println!(
        "  instantiation median:      {} (target <= 15 us)",
        micros(instantiate)
    );
    println!("  load from compile cache:   {}", micros(cached_load));
    println!("  load average:              {}", support::load_average());
}
