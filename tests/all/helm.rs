//! Helm charts as apps: rendered by Helm's own engine in the sandbox, with
//! EMCO's values order, hooks run by rsync, on a virtual cluster end to end.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use wasmco_runtime::helm::{HelmConfig, HelmError, HelmLimits, HelmRenderer, RenderRequest};

use crate::deploy::{action, find};
use crate::support::clusters::{
    CA, Cluster, Deployment, SCENARIO_PATIENCE, all, config_map, place_on_solo_and_approve,
};
use crate::support::server::{Server, doc, expect};
use crate::support::wait::{eventually, wait_until};

/// A `.tgz` of the directory `dir` under the top directory `top`, as
/// `helm package` makes it.
pub fn package(dir: &Path, top: &str) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    builder.append_dir_all(top, dir).unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// A `.tgz` of the given text files.
pub fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    crate::api::tgz(&files)
}

fn chart_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/charts")
        .join(name)
}

pub fn web_chart() -> Vec<u8> {
    package(&chart_dir("web"), "web")
}

/// EMCO's profile `.tgz`: `manifest.yaml` naming the values file.
fn profile(values: &str) -> Vec<u8> {
    tgz(&[
        (
            "manifest.yaml",
            "version: v1\ntype:\n  values: \"override_values.yaml\"\n",
        ),
        ("override_values.yaml", values),
    ])
}

/// Project `p` with composite app `ca/v1`: the `web` chart (with a profile)
/// and a plain app; a DIG `d` (release `r1`) placing both on `solo`.
fn set_up(server: &Server, overrides: Value, kubeconfig: &[u8]) -> String {
    expect(
        server.post("/v2/cluster-providers", doc("lab", json!({}))),
        201,
    );
    server.register_cluster("lab", "solo", kubeconfig);
    crate::support::server::project_with_app(server);
    let ca = format!("/v2/projects/p/{CA}");
    expect(
        server.upload(
            &format!("{ca}/apps"),
            doc("web", json!({})),
            Some(web_chart()),
        ),
        201,
    );
    let plain = config_map("plain", json!({"kind": "plain"}));
    expect(
        server.upload(
            &format!("{ca}/apps"),
            doc("plain", json!({})),
            Some(plain.into_bytes()),
        ),
        201,
    );
    expect(
        server.post(&format!("{ca}/composite-profiles"), doc("prof", json!({}))),
        201,
    );
    expect(
        server.upload(
            &format!("{ca}/composite-profiles/prof/profiles"),
            doc("web-profile", json!({"app": "web"})),
            Some(profile(
                "replicas: 2\nenv:\n  LOG: debug\ncache:\n  size: 64\n",
            )),
        ),
        201,
    );
    let dig = format!("{ca}/deployment-intent-groups/d");
    let spec = json!({"compositeProfile": "prof", "version": "r1", "overrideValues": overrides});
    expect(
        server.post(&format!("{ca}/deployment-intent-groups"), doc("d", spec)),
        201,
    );
    place_on_solo_and_approve(server, &dig, &["web", "plain"]);
    dig
}

#[test]
fn a_chart_and_a_plain_app_deploy_side_by_side_with_values_in_emco_order_and_hooks() {
    let cluster = Cluster::virtual_cluster();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        data.path(),
        &["--resync-interval", "1s", "--probe-interval", "1s"],
    );
    let overrides =
        json!([{"app": "web", "values": {"image.tag": "1.26", "widget.size": "large"}}]);
    let dig = set_up(&server, overrides, cluster.kubeconfig().0);
    expect(action(&server, &dig, "instantiate"), 202);

    // What Helm rendered, as the context shows it.
    let context = expect(server.get(&format!("{dig}/context")), 200);
    let web = context["apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "web")
        .unwrap();
    let resources = web["clusters"][0]["resources"].as_array().unwrap().clone();
    assert_eq!(
        resources[0]["kind"], "CustomResourceDefinition",
        "CRDs first"
    );
    let deployment = find(&resources, "Deployment", "r1-web");
    // Chart, then profile (replicas, LOG), then the DIG's --set (tag).
    assert_eq!(deployment["spec"]["replicas"], 2);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.26");
    assert_eq!(
        container["env"],
        json!([{"name": "LOG", "value": "debug"}, {"name": "MODE", "value": "production"}])
    );
    assert_eq!(
        deployment["metadata"]["labels"]["helm.sh/chart"],
        "web-1.2.3"
    );
    let info = &find(&resources, "ConfigMap", "r1-web-info")["data"];
    assert_eq!(info["greeting"], "hello from r1", "tpl");
    assert_eq!(info["release"], "r1");
    assert_eq!(info["namespace"], "default");
    assert_eq!(info["chartVersion"], "1.2.3");
    assert!(
        info["kubeVersion"].as_str().unwrap().starts_with("v1."),
        "{info}"
    );
    assert_eq!(
        info["secretFound"], "false",
        "lookup renders as under helm template"
    );
    assert_eq!(info["env.yaml"], "LOG: debug\nMODE: production", "toYaml");
    // The subchart: its own values overridden by the parent's, and the global.
    let cache = &find(&resources, "ConfigMap", "r1-cache")["data"];
    assert_eq!(cache["size"], "64");
    assert_eq!(cache["region"], "eu-west");
    assert_eq!(
        find(&resources, "Widget", "r1-web")["spec"]["size"],
        "large"
    );
    for skipped in [
        "never-rendered",
        "r1-web-test",
        "r1-web-migrate",
        "r1-web-installed",
    ] {
        assert!(
            !resources.iter().any(|r| r["metadata"]["name"] == skipped),
            "{skipped} is a blank template, a test hook or a hook"
        );
    }
    let hooks = web["hooks"].as_array().unwrap();
    let hooked: Vec<(&str, &str, i64)> = hooks
        .iter()
        .map(|h| {
            (
                h["manifest"]["metadata"]["name"].as_str().unwrap(),
                h["events"][0].as_str().unwrap(),
                h["weight"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hooked,
        [
            ("r1-web-migrate", "pre-install", -5),
            ("r1-web-installed", "post-install", 1)
        ]
    );

    // On the cluster: everything, the hooks included, and the plain app.
    eventually("everything ready", SCENARIO_PATIENCE, || {
        let rows = Deployment::rows_of(&server, &dig);
        // The chart's six resources and the plain app's one.
        if all(&rows, "Applied", "Ready") && rows.len() == 7 {
            return Ok(());
        }
        let seen: Vec<_> = rows
            .iter()
            .map(|r| (&r.kind, &r.name, &r.deployed, &r.ready, &r.detail))
            .collect();
        Err(format!("not ready: {seen:#?}"))
    });
    wait_until("the post-install hook", SCENARIO_PATIENCE, || {
        cluster.get("configmap", "r1-web-installed").is_some()
    });
    // The status shows the hooks that ran, apart from the resources.
    let status = expect(
        server.get(&format!("{dig}/status?status=ready&output=detail&app=web")),
        200,
    );
    let hooks: Vec<(&str, &str)> = status["apps"][0]["clusters"][0]["hooks"]
        .as_array()
        .unwrap_or_else(|| panic!("no hooks in {status}"))
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap(),
                h["readyStatus"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hooks,
        [("r1-web-migrate", "Ready"), ("r1-web-installed", "Ready")]
    );
    for (kind, name) in [
        ("deployment", "r1-web"),
        ("service", "r1-web"),
        ("configmap", "r1-web-info"),
        ("configmap", "r1-cache"),
        ("configmap", "plain"),
        ("job", "r1-web-migrate"),
        ("configmap", "r1-web-installed"),
    ] {
        assert!(
            cluster.get(kind, name).is_some(),
            "{kind} {name} is on the cluster"
        );
    }
    let widget = cluster.kubectl(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets/r1-web",
    ]);
    assert!(widget.contains("\"large\""), "{widget}");
    let job = cluster.get("job", "r1-web-migrate").unwrap();
    assert_eq!(
        job["metadata"]["labels"]["wasmco.io/hook-of"],
        wasmco_rsync::owner_label("p/ca/v1/d")
    );
    assert!(
        job["metadata"]["labels"]
            .get("wasmco.io/deployment-intent-group")
            .is_none()
    );

    // Terminate removes it all, the hooks' objects included.
    expect(action(&server, &dig, "terminate"), 202);
    wait_until("everything removed", SCENARIO_PATIENCE, || {
        ["r1-web-info", "r1-cache", "plain", "r1-web-installed"]
            .iter()
            .all(|name| cluster.get("configmap", name).is_none())
            && cluster.get("job", "r1-web-migrate").is_none()
            && cluster.get("deployment", "r1-web").is_none()
    });
}

#[test]
fn charts_helm_cannot_install_are_refused_at_upload_with_helms_message() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    crate::support::server::project_with_app(&server);
    let apps = format!("/v2/projects/p/{CA}/apps");
    let template = (
        "c/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let cases = [
        (
            tgz(&[
                (
                    "c/Chart.yaml",
                    "apiVersion: v2\nname: c\nversion: 0.1.0\ntype: library\n",
                ),
                template,
            ]),
            "library charts are not installable",
        ),
        (
            tgz(&[
                (
                    "c/Chart.yaml",
                    "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n  - name: db\n    version: 1.0.0\n",
                ),
                template,
            ]),
            "missing in charts/ directory: db",
        ),
        (
            tgz(&[("c/Chart.yaml", "apiVersion: v2\nname: c\n"), template]),
            "version is required",
        ),
    ];
    for (index, (chart, message)) in cases.into_iter().enumerate() {
        let body = expect(
            server.upload(&apps, doc(&format!("a{index}"), json!({})), Some(chart)),
            422,
        );
        assert_eq!(body["field"], "file", "{body}");
        assert!(
            body["message"].as_str().unwrap().contains(message),
            "{body}"
        );
    }
    let listed = expect(server.get(&apps), 200);
    assert_eq!(listed, json!([]), "nothing refused was stored");
    // A chart that loads is kept.
    expect(
        server.upload(&apps, doc("web", json!({})), Some(web_chart())),
        201,
    );
}

#[test]
fn a_render_failure_fails_instantiate_naming_the_app_and_the_template() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let cluster = crate::support::server::Virtual::start("solo");
    let dig = set_up(
        &server,
        json!([{"app": "web", "values": {"image.repository": "null"}}]),
        &cluster.kubeconfig,
    );
    let body = expect(action(&server, &dig, "instantiate"), 422);
    let message = body.to_string();
    for part in [
        "app web",
        "web/templates/deployment.yaml",
        "image.repository is required",
    ] {
        assert!(message.contains(part), "{part} in {message}");
    }
    let state = expect(server.get(&format!("{dig}/status")), 200);
    assert_eq!(
        state["states"]["actions"].as_array().map(Vec::len),
        Some(2),
        "{state}"
    );
}

/// The renderer with small limits, so that hostile charts hit them fast.
fn strict_renderer() -> HelmRenderer {
    crate::support::helm_renderer();
    HelmRenderer::new(HelmConfig {
        limits: HelmLimits {
            render_deadline: Duration::from_secs(2),
            memory_bytes: 128 << 20,
            output_bytes: 4 << 20,
            ..HelmLimits::default()
        },
        keep_warm: false,
        ..HelmConfig::default()
    })
}

fn render(renderer: &HelmRenderer, template: &str) -> Result<usize, HelmError> {
    let chart = tgz(&[
        ("h/Chart.yaml", "apiVersion: v2\nname: h\nversion: 0.1.0\n"),
        ("h/templates/t.yaml", template),
    ]);
    let request = RenderRequest {
        chart,
        release: "r1".into(),
        ..RenderRequest::default()
    };
    renderer
        .render(&request)
        .map(|rendered| rendered.manifests.len())
}

#[test]
fn a_hostile_chart_fails_at_the_renderers_limits_and_the_next_render_works() {
    let renderer = strict_renderer();
    // Ten billion turns over one list: the deadline (or, as Go's range
    // allocates, the memory cap) stops it.
    let endless = "{{ $l := until 100000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}";
    let error = render(&renderer, endless).unwrap_err();
    assert!(
        matches!(&error, HelmError::Limit(limit) if limit.contains("time") || limit.contains("memory")),
        "{error:?}"
    );
    let huge = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  x: {{ repeat 200000000 \"x\" }}\n";
    let error = render(&renderer, huge).unwrap_err();
    assert!(
        matches!(&error, HelmError::Limit(limit) if limit.contains("memory") || limit.contains("output")),
        "{error:?}"
    );
    let fine = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n";
    assert_eq!(render(&renderer, fine).unwrap(), 1);
}

/// A chart whose one template is `template` and whose values are
/// `values`, with a helper that includes itself.
fn chart_of(template: &str, values: &str) -> Vec<u8> {
    tgz(&[
        ("h/Chart.yaml", "apiVersion: v2\nname: h\nversion: 0.1.0\n"),
        ("h/values.yaml", values),
        (
            "h/templates/_helpers.tpl",
            "{{- define \"h.loop\" -}}{{ include \"h.loop\" . }}{{- end -}}",
        ),
        ("h/templates/t.yaml", template),
    ])
}

/// A chart whose one template is `template`, with values `values`.
fn plain_chart(template: &str, values: &str) -> Vec<u8> {
    tgz(&[
        ("h/Chart.yaml", "apiVersion: v2\nname: h\nversion: 0.1.0\n"),
        ("h/values.yaml", values),
        ("h/templates/t.yaml", template),
    ])
}

#[test]
fn templates_that_recurse_without_end_are_refused_naming_the_template() {
    crate::support::helm_renderer();
    let renderer = HelmRenderer::new(HelmConfig {
        keep_warm: false,
        ..HelmConfig::default()
    });
    let render = |chart: Vec<u8>| {
        renderer.render(&RenderRequest {
            chart,
            release: "r1".into(),
            ..RenderRequest::default()
        })
    };
    // A define including itself: Helm's own guard or the stack's names it.
    let error = render(chart_of("{{ include \"h.loop\" . }}", "")).unwrap_err();
    let HelmError::Chart { message, .. } = &error else {
        panic!("not Helm's refusal: {error:?}");
    };
    assert!(message.contains("h.loop"), "{message}");
    // A value rendered with tpl that renders itself again.
    let error = render(plain_chart(
        "x: {{ tpl .Values.x . }}",
        "x: '{{ tpl .Values.x . }}'",
    ))
    .unwrap_err();
    let HelmError::Chart { message, .. } = &error else {
        panic!("not Helm's refusal: {error:?}");
    };
    assert!(
        message.contains("recurse") && message.contains("h/templates/t.yaml"),
        "{message}"
    );
    // The next chart renders.
    let fine = chart_of(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n",
        "",
    );
    assert_eq!(render(fine).unwrap().manifests.len(), 1);
}

#[test]
fn a_chart_of_more_entries_than_any_archive_may_hold_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    crate::support::server::project_with_app(&server);
    let mut files: Vec<(String, String)> = vec![(
        "h/Chart.yaml".into(),
        "apiVersion: v2\nname: h\nversion: 0.1.0\n".into(),
    )];
    files.extend((0..10_051).map(|i| (format!("h/files/f{i}.txt"), String::new())));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    crate::support::server::refused(
        server.upload(
            "/v2/projects/p/composite-apps/ca/v1/apps",
            doc("many", json!({})),
            Some(tgz(&files)),
        ),
        400,
        Some("file"),
        "more than 10000 entries",
    );
}

/// A server with cluster `lab/solo`, and composite app `ca` of project
/// `p` whose app `heavy` is a chart that grows every render to the
/// renderer's 256 MiB cap, in `digs` DIGs; their paths.
fn heavy_digs(
    server: &Server,
    cluster: &crate::support::server::Virtual,
    digs: usize,
) -> Vec<String> {
    expect(
        server.post("/v2/cluster-providers", doc("lab", json!({}))),
        201,
    );
    server.register_cluster("lab", "solo", &cluster.kubeconfig);
    crate::support::server::project_with_app(server);
    let ca = format!("/v2/projects/p/{CA}");
    let heavy = plain_chart(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: heavy}\ndata:\n  x: {{ repeat 400000000 \"x\" }}\n",
        "",
    );
    expect(
        server.upload(&format!("{ca}/apps"), doc("heavy", json!({})), Some(heavy)),
        201,
    );
    expect(
        server.post(&format!("{ca}/composite-profiles"), doc("prof", json!({}))),
        201,
    );
    (0..digs)
        .map(|i| {
            let name = format!("d{i}");
            expect(
                server.post(
                    &format!("{ca}/deployment-intent-groups"),
                    doc(&name, json!({"compositeProfile": "prof", "version": "r1"})),
                ),
                201,
            );
            let dig = format!("{ca}/deployment-intent-groups/{name}");
            place_on_solo_and_approve(server, &dig, &["heavy"]);
            dig
        })
        .collect()
}

/// Instantiates every DIG at once; the answers' status codes.
fn instantiate_all(server: &Server, digs: &[String]) -> Vec<u16> {
    std::thread::scope(|scope| {
        let calls: Vec<_> = digs
            .iter()
            .map(|dig| scope.spawn(|| action(server, dig, "instantiate").status().as_u16()))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    })
}

/// Charts that fill the renderer's memory, instantiated 24 at once: they
/// take their turns at a bounded number of render slots, so the host
/// stays small, and each refused one leaves its DIG as it was. A render
/// that waits too long for its turn is a 503.
#[test]
fn concurrent_heavy_renders_take_turns_and_keep_the_host_small() {
    let cluster = crate::support::server::Virtual::start("solo");
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--helm-renders", "2"]);
    let digs = heavy_digs(&server, &cluster, 24);
    let before = crate::support::server::peak_memory_kib(server.pid());
    let answers = instantiate_all(&server, &digs);
    let peak = crate::support::server::peak_memory_kib(server.pid());
    assert!(
        peak < 1 << 20,
        "24 heavy renders took the host from {before} KiB to {peak} KiB"
    );
    assert!(answers.iter().all(|s| *s == 422), "{answers:?}");
    for dig in &digs {
        let state = expect(server.get(&format!("{dig}/status")), 200);
        assert_eq!(state["deployedStatus"], "Approved", "{state}");
    }

    let data = tempfile::tempdir().unwrap();
    let impatient = Server::start_with(
        data.path(),
        &["--helm-renders", "1", "--helm-queue-wait", "1ms"],
    );
    let digs = heavy_digs(&impatient, &cluster, 8);
    let answers = instantiate_all(&impatient, &digs);
    assert!(
        answers.iter().all(|s| *s == 422 || *s == 503),
        "{answers:?}"
    );
    assert!(
        answers.contains(&503),
        "a long wait is answered 503: {answers:?}"
    );
}
