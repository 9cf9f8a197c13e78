//! The same placement controller in Rust, Python and JavaScript, side by
//! side in one run: component size, build, compile on upload, load from the
//! compile cache, instantiation, call median and peak memory.
//!
//! `cargo bench -p wasmco --bench languages`
//!
//! Each controller is a project from `wasmco controller new --lang …` whose
//! source is replaced by `benches/languages/` (placement.rs, app.py,
//! app.js), built with `wasmco controller build` and the pinned toolchains
//! of `tests/sdk/toolchains.sh`. Workload: 10 apps over 1,000 clusters (3
//! labels each); each app's rule is one `allOf` label and two `anyOf`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use wasmco_orchestrator::draft::{AppDraft, ClusterInfo, DraftContext};
use wasmco_runtime::{ControllerKind, LimitOverrides, Runtime, RuntimeConfig};

const CLUSTERS: usize = 1_000;
const APPS: usize = 10;

/// Name, `--lang`, this benchmark's source, where it goes in the project,
/// and how many calls to time.
const LANGUAGES: [(&str, &str, &str, &str, usize); 3] = [
    ("Rust", "rust", "placement.rs", "src/lib.rs", 500),
    ("Python", "python", "app.py", "app.py", 30),
    ("JavaScript", "js", "app.js", "app.js", 30),
];

fn request() -> wasmco_runtime::contract::PlacementRequest {
    let clusters = (0..CLUSTERS)
        .map(|i| ClusterInfo {
            provider: "edge".to_owned(),
            name: format!("edge-{i:04}"),
            labels: vec![
                "edge".to_owned(),
                format!("region-{}", i % 10),
                format!("zone-{}", i % 50),
            ],
            kv: Vec::new(),
        })
        .collect();
    let apps: Vec<String> = (0..APPS).map(|i| format!("app-{i}")).collect();
    let rules: serde_json::Map<String, serde_json::Value> = apps
        .iter()
        .enumerate()
        .map(|(i, app)| {
            let rule = serde_json::json!({
                "allOf": [format!("region-{i}")],
                "anyOf": [format!("zone-{}", (i * 7 + 1) % 50), format!("zone-{}", (i * 7 + 2) % 50)],
            });
            (app.clone(), rule)
        })
        .collect();
    let draft = DraftContext::new(
        apps.into_iter()
            .map(|a| AppDraft::new(a, Vec::new()))
            .collect(),
        clusters,
    );
    draft.placement_request(serde_json::Value::Object(rules).to_string())
}

/// Runs the CLI with the toolchains, and cargo's output kept in `scratch`.
fn wasmco(args: &[&str], scratch: &Path, tools: &[String]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(args)
        .env("CARGO_TARGET_DIR", scratch.join("target"))
        .env("WASMCO_COMPONENTIZE_PY", &tools[0])
        .env("WASMCO_COMPONENTIZE_JS", &tools[1])
        .output()
        .expect("wasmco runs");
    assert!(
        output.status.success(),
        "wasmco {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn time<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = work();
    (value, started.elapsed())
}

struct Figures {
    name: &'static str,
    bytes: usize,
    build: Duration,
    compile: Duration,
    cached_load: Duration,
    instantiate: Duration,
    call: Duration,
    memory: usize,
}

fn measure(
    (name, lang, source, target, calls): (&'static str, &str, &str, &str, usize),
    scratch: &Path,
    tools: &[String],
    request: &wasmco_runtime::contract::PlacementRequest,
) -> (Figures, Vec<wasmco_runtime::contract::PlacementEdit>) {
    let project = scratch.join(lang);
    let project_arg = project.to_str().expect("UTF-8 path");
    wasmco(
        &[
            "controller",
            "new",
            "bench-placement",
            "--type",
            "placement",
            "--lang",
            lang,
            "--dir",
            project_arg,
        ],
        scratch,
        tools,
    );
    let ours = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/languages")
        .join(source);
    std::fs::copy(ours, project.join(target)).expect("the benchmark's source");
    let (built, build) = time(|| wasmco(&["controller", "build", project_arg], scratch, tools));
    let wasm = std::fs::read(built.trim()).expect("the component");
    let cache = scratch.join(format!("cache-{lang}"));
    let runtime = Runtime::new(RuntimeConfig::new(&cache)).expect("runtime");
    let load = |runtime: &Runtime| {
        runtime
            .load(
                name,
                ControllerKind::Placement,
                &wasm,
                &LimitOverrides::default(),
            )
            .expect("loads")
    };
    let (controller, compile) = time(|| load(&runtime));
    let again = Runtime::new(RuntimeConfig::new(&cache)).expect("runtime");
    let (_, cached_load) = time(|| load(&again));
    let instantiate = median(
        (0..calls)
            .map(|_| time(|| controller.instantiate().expect("instantiates")).1)
            .collect(),
    );
    let first = controller.place(request).expect("the call");
    let call = median(
        (0..calls)
            .map(|_| time(|| std::hint::black_box(controller.place(request).expect("the call"))).1)
            .collect(),
    );
    let figures = Figures {
        name,
        bytes: wasm.len(),
        build,
        compile,
        cached_load,
        instantiate,
        call,
        memory: first.memory_bytes,
    };
    (figures, first.value)
}

fn main() {
    let output = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sdk/toolchains.sh"))
        .output()
        .expect("bash runs");
    assert!(output.status.success(), "the toolchains install");
    let tools: Vec<String> = String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect();
    let scratch = tempfile::tempdir().expect("temp dir");
    let request = request();
    let mut rows = Vec::new();
    let mut answers = Vec::new();
    for language in LANGUAGES {
        let (figures, edits) = measure(language, scratch.path(), &tools, &request);
        rows.push(figures);
        answers.push(format!("{edits:?}"));
    }
    assert!(
        answers.iter().all(|a| *a == answers[0]),
        "the three controllers disagree"
    );
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
    let mib = |b: usize| format!("{:.1} MiB", b as f64 / f64::from(1 << 20));
    println!(
        "One placement (allOf/anyOf by label, {APPS} apps x {CLUSTERS} clusters) per language, in one run; the three answer alike:"
    );
    println!(
        "  {:<11} {:>10} {:>9} {:>11} {:>11} {:>12} {:>11} {:>11}",
        "", "component", "build", "compile", "from cache", "instantiate", "call p50", "peak memory"
    );
    for row in &rows {
        println!(
            "  {:<11} {:>10} {:>9} {:>11} {:>11} {:>12} {:>11} {:>11}",
            row.name,
            mib(row.bytes),
            format!("{:.1} s", row.build.as_secs_f64()),
            ms(row.compile),
            ms(row.cached_load),
            us(row.instantiate),
            us(row.call),
            mib(row.memory),
        );
    }
    let rust = &rows[0];
    for row in &rows[1..] {
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "  {} / Rust: component {:.0}x, compile {:.0}x, from cache {:.0}x, instantiate {:.1}x, call {:.1}x, memory {:.1}x",
            row.name,
            row.bytes as f64 / rust.bytes as f64,
            ratio(row.compile, rust.compile),
            ratio(row.cached_load, rust.cached_load),
            ratio(row.instantiate, rust.instantiate),
            ratio(row.call, rust.call),
            row.memory as f64 / rust.memory as f64,
        );
    }
}
