//! The Helm renderer: the first compile of its module (off the request
//! path), then renders of a chart of 30 templates with a subchart, split
//! between instantiating the renderer (Go's and Helm's start-up) and
//! rendering, and the instance's peak memory.
//!
//! `cargo bench -p wasmco --bench helm`

use std::time::{Duration, Instant};

use wasmco_runtime::helm::{HelmConfig, HelmRenderer, RenderRequest};

const TEMPLATES: usize = 30;
const RENDERS: usize = 40;
const TARGET_RENDER_MS: f64 = 50.0;
const TARGET_COMPILE_S: f64 = 60.0;
const TARGET_MEMORY_MIB: f64 = 256.0;

/// A chart of `TEMPLATES` templates (helpers, loops, values) and a subchart.
fn chart() -> Vec<u8> {
    let mut files: Vec<(String, String)> = vec![
        (
            "bench/Chart.yaml".into(),
            "apiVersion: v2\nname: bench\nversion: 1.0.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n".into(),
        ),
        (
            "bench/values.yaml".into(),
            "replicas: 2\nimage: {repository: nginx, tag: \"1.25\"}\nenv: {A: a, B: b, C: c}\nglobal: {region: eu}\n".into(),
        ),
        (
            "bench/templates/_helpers.tpl".into(),
            "{{- define \"bench.labels\" -}}\napp: {{ .Chart.Name }}\nrelease: {{ .Release.Name }}\n{{- end -}}\n".into(),
        ),
        ("bench/charts/sub/Chart.yaml".into(), "apiVersion: v2\nname: sub\nversion: 0.1.0\n".into()),
        ("bench/charts/sub/values.yaml".into(), "size: 3\n".into()),
        (
            "bench/charts/sub/templates/cm.yaml".into(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\ndata:\n  size: {{ .Values.size | quote }}\n  region: {{ .Values.global.region }}\n".into(),
        ),
    ];
    for i in 0..TEMPLATES - 1 {
        files.push((
            format!("bench/templates/deploy{i}.yaml"),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{{{ .Release.Name }}}}-part{i}\n  labels:\n    {{{{- include \"bench.labels\" . | nindent 4 }}}}\n\
                 spec:\n  replicas: {{{{ .Values.replicas }}}}\n  selector:\n    matchLabels:\n      part: \"{i}\"\n  template:\n    metadata:\n      labels:\n        part: \"{i}\"\n\
                 {{{{- include \"bench.labels\" . | nindent 8 }}}}\n    spec:\n      containers:\n        - name: main\n          image: \"{{{{ .Values.image.repository }}}}:{{{{ .Values.image.tag }}}}\"\n          env:\n\
                 {{{{- range $k, $v := .Values.env }}}}\n            - name: {{{{ $k }}}}\n              value: {{{{ $v | quote }}}}\n{{{{- end }}}}\n"
            ),
        ));
    }
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, text) in &files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, text.as_bytes())
            .expect("tar");
    }
    builder.into_inner().expect("tar").finish().expect("gzip")
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    // A cache of its own: this is the first compile on a machine.
    let cache = tempfile::tempdir().expect("temp dir");
    let cold = HelmRenderer::new(HelmConfig {
        cache_dir: cache.path().to_owned(),
        ..HelmConfig::default()
    });
    let compile = cold.prepare().expect("the renderer compiles");
    let loaded = HelmRenderer::new(HelmConfig {
        cache_dir: cache.path().to_owned(),
        keep_warm: false,
        ..HelmConfig::default()
    })
    .prepare()
    .expect("the renderer loads");

    let request = RenderRequest {
        chart: chart(),
        set: vec!["image.tag=1.26".into()],
        release: "r1".into(),
        namespace: "default".into(),
        ..RenderRequest::default()
    };
    let check = |rendered: &wasmco_runtime::helm::Rendered| {
        assert_eq!(
            rendered.manifests.len(),
            TEMPLATES,
            "every template rendered"
        );
    };
    // Every render on a fresh instance: what a render costs in CPU.
    let fresh = HelmRenderer::new(HelmConfig {
        cache_dir: cache.path().to_owned(),
        keep_warm: false,
        ..HelmConfig::default()
    });
    let (mut instantiate, mut render, mut memory) = (Vec::new(), Vec::new(), 0usize);
    for _ in 0..RENDERS {
        let rendered = fresh.render(&request).expect("renders");
        check(&rendered);
        instantiate.push(rendered.timings.instantiate);
        render.push(rendered.timings.render);
        memory = memory.max(rendered.timings.memory_bytes);
    }
    // As a server renders: an instance initialised ahead, off the request path.
    let mut request_path = Vec::new();
    for _ in 0..RENDERS {
        // Time for the next instance to be readied, as between requests.
        std::thread::sleep(Duration::from_millis(150));
        let started = Instant::now();
        let rendered = cold.render(&request).expect("renders");
        request_path.push(started.elapsed());
        check(&rendered);
    }
    let (instantiate, render, request_path) =
        (median(instantiate), median(render), median(request_path));
    let memory_mib = memory as f64 / f64::from(1u32 << 20);
    println!(
        "helm renderer, chart of {TEMPLATES} templates with a subchart, {RENDERS} renders each"
    );
    println!(
        "  first compile           {:>8.1} s   target <= {TARGET_COMPILE_S} s   ratio {:.2}",
        compile.as_secs_f64(),
        compile.as_secs_f64() / TARGET_COMPILE_S
    );
    println!(
        "  load from the cache     {:>8.1} ms",
        loaded.as_secs_f64() * 1e3
    );
    println!("  instantiate (Go + Helm) {instantiate:>8.1} ms   median, fresh instance");
    println!("  render                  {render:>8.1} ms   median");
    println!(
        "  request path (warm)     {request_path:>8.1} ms   median   target <= {TARGET_RENDER_MS} ms   ratio {:.2}",
        request_path / TARGET_RENDER_MS
    );
    println!(
        "  cold render (inst+render){:>7.1} ms   median",
        instantiate + render
    );
    println!(
        "  peak instance memory    {memory_mib:>8.1} MiB  target <= {TARGET_MEMORY_MIB} MiB ratio {:.2}",
        memory_mib / TARGET_MEMORY_MIB
    );
}
