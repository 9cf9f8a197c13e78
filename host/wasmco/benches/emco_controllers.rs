//! Each built-in EMCO controller's call over 1,000 clusters, against the
//! generic placement call over the same clusters, measured in one run.
//!
//! `cargo bench -p wasmco --bench emco_controllers`
//!
//! For a profile: `WASMCO_BENCH_ONLY=gac,dtc` measures only those,
//! `WASMCO_BENCH_LOOP=1` calls each 2,000 times back to back (run it under
//! `perf record` with `WASMCO_PROFILE=perfmap`), and
//! `WASMCO_BENCH_WASM_DIR=dir` loads `dir/<name>.wasm` instead of the
//! built-in (a plugin built without `strip`, so `perf` names its functions).
//!
//! Workload: 10 apps, each one Deployment, placed on all 1,000 clusters
//! (one node each, three labels). Every controller gets one intent per app
//! of the kinds it serves: gac a new ConfigMap with a json patch on the
//! clusters of a label, ovnaction a workload with one interface, dtc an
//! inbound intent with one client app, hpa-placement and hpa-action a
//! consumer asking for one core (every cluster has it: hpa-placement
//! checks all 1,000 and keeps them, so it makes no edit), sfc one chain
//! through the ten apps with a client selector and a provider network at
//! each end, sfcclient each app a client of that chain (in another DIG)
//! whose logical cloud matches the second of three selectors.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmco_orchestrator::draft::{AppDraft, ClusterInfo, ClusterNodes, DraftContext, NodeInfo};
use wasmco_runtime::contract::PlacementEdit;
use wasmco_runtime::{Controller, ControllerKind, LimitOverrides, Runtime, RuntimeConfig};

const CLUSTERS: usize = 1_000;
const APPS: usize = 10;
const TARGET_RATIO: f64 = 2.0;

fn clusters() -> Vec<ClusterInfo> {
    (0..CLUSTERS)
        .map(|i| ClusterInfo {
            provider: "edge".to_owned(),
            name: format!("edge-cluster-{i:04}"),
            labels: vec![
                "edge".to_owned(),
                "networkpolicy-supported".to_owned(),
                format!("region-{}", i % 10),
            ],
            kv: Vec::new(),
        })
        .collect()
}

fn app(i: usize) -> String {
    format!("app-{i}")
}

fn deployment(name: &str) -> wasmco_core::Resource {
    wasmco_core::Resource::from_manifest(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": "registry.local/web:1"}]}}}
    }))
    .expect("a Deployment")
}

fn group() -> Value {
    json!({"project": "proj1", "compositeApp": "bench", "compositeAppVersion": "v1",
           "name": "bench-dig", "logicalCloud": "default", "namespace": "default"})
}

/// The tree the host hands a declaring controller: `intents` named by the
/// DIG, all of them in `all`.
fn tree(name: &str, intents: Vec<Value>) -> String {
    json!({"name": name, "deploymentIntentGroup": group(),
           "intents": intents.clone(), "all": intents, "facts": {}})
    .to_string()
}

fn gac_tree() -> String {
    let resources: Vec<Value> = (0..APPS)
        .map(|i| {
            let name = format!("settings-{i}");
            let file = format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  size: \"5\"\n"
            );
            // As the host hands it over: the file, and the map it holds.
            let object: Value = serde_norway::from_str(&file).expect("the template is YAML");
            json!({"kind": "resource", "metadata": {"name": name},
                "spec": {"app": app(i), "newObject": "true",
                    "resourceGVK": {"apiVersion": "v1", "kind": "ConfigMap", "name": name}},
                "file": base64(&file), "fileObject": object,
                "children": {"customizations": [{"kind": "customization",
                    "metadata": {"name": format!("{name}-size")},
                    "spec": {"clusterSpecific": "true",
                        "clusterInfo": {"scope": "label", "clusterProvider": "edge",
                            "clusterLabel": format!("region-{i}"), "mode": "allow"},
                        "patchType": "json",
                        "patchJson": [{"op": "replace", "path": "/data/size", "value": "10"}]},
                    "files": []}]}})
        })
        .collect();
    let intent = json!({"kind": "generic k8s intent", "metadata": {"name": "bench-gac"},
        "spec": {}, "children": {"resources": resources}});
    tree("bench-gac", vec![intent])
}

fn ovnaction_tree() -> String {
    let workloads: Vec<Value> = (0..APPS)
        .map(|i| {
            json!({"kind": "workload intent", "metadata": {"name": format!("{}-workload", app(i))},
                "spec": {"app": app(i), "workloadResource": app(i), "type": "Deployment"},
                "children": {"interfaces": [{"kind": "interface intent",
                    "metadata": {"name": "eth1"},
                    "spec": {"interface": "eth1", "name": "protected-net",
                        "defaultGateway": "false", "ipAddress": "10.10.10.5"}}]}})
        })
        .collect();
    let intent = json!({"kind": "network controller intent", "metadata": {"name": "bench-ovn"},
        "spec": {}, "children": {"workload-intents": workloads}});
    tree("bench-ovn", vec![intent])
}

fn dtc_tree() -> String {
    let inbound: Vec<Value> = (0..APPS)
        .map(|i| {
            let client = app((i + 1) % APPS);
            json!({"kind": "inbound intent", "metadata": {"name": format!("{}-in", app(i))},
                "spec": {"app": app(i), "appLabel": format!("app={}", app(i)),
                    "serviceName": app(i), "port": 8080, "protocol": "TCP", "serviceMesh": "none"},
                "children": {"clients": [{"kind": "inbound clients intent",
                    "metadata": {"name": client},
                    "spec": {"app": client, "appLabel": format!("app={client}"),
                        "serviceName": client, "namespaces": [], "cidrs": []}}]}})
        })
        .collect();
    let intent = json!({"kind": "traffic group intent", "metadata": {"name": "bench-dtc"},
        "spec": {}, "children": {"inbound-intents": inbound}});
    tree("bench-dtc", vec![intent])
}

/// A chain's client selector at `end`, matching pods and namespaces
/// labelled `sfc: <label>`.
fn selector(name: &str, end: &str, label: &str) -> Value {
    json!({"kind": "client-selectors", "metadata": {"name": name},
        "spec": {"chainEnd": end, "podSelector": {"matchLabels": {"sfc": label}},
            "namespaceSelector": {"matchLabels": {"sfc": label}}}})
}

fn sfc_tree() -> String {
    let links: Vec<Value> = (0..APPS)
        .map(|i| {
            json!({"kind": "links", "metadata": {"name": app(i)},
                "spec": {"leftNet": format!("net-{i}"), "rightNet": format!("net-{}", i + 1),
                    "linkLabel": format!("fn={}", app(i)), "app": app(i),
                    "workloadResource": app(i), "resourceType": "Deployment"}})
        })
        .collect();
    let network = |end: &str, octet: u8| {
        json!({"kind": "provider-networks", "metadata": {"name": format!("{end}-pnet")},
            "spec": {"chainEnd": end, "providerNetwork": format!("{end}-pnetwork"),
                "gatewayIp": format!("172.30.{octet}.2"), "subnet": format!("172.30.{octet}.0/24")}})
    };
    let chain = json!({"kind": "network-chains", "metadata": {"name": "bench-chain"},
        "spec": {"chainType": "Routing", "namespace": "default"},
        "children": {
            "links": links,
            "client-selectors": [selector("left-clients", "left", "head"),
                                 selector("right-clients", "right", "tail")],
            "provider-networks": [network("left", 10), network("right", 20)]}});
    tree("bench-chain", vec![chain])
}

/// Each app a client of the chain's left end, in a logical cloud whose
/// labels the second of its three selectors matches; the chain is another
/// DIG's, read across (`others`).
fn sfcclient_tree() -> String {
    let clients: Vec<Value> = (0..APPS)
        .map(|i| {
            json!({"kind": "sfc-clients", "metadata": {"name": format!("{}-client", app(i))},
                "spec": {"chainEnd": "left", "sfcIntent": "bench-chain", "compositeApp": "chain-ca",
                    "compositeAppVersion": "v1", "deploymentIntentGroup": "chain-dig",
                    "app": app(i), "workloadResource": app(i), "resourceType": "Deployment"}})
        })
        .collect();
    let mut group = group();
    group["logicalCloudLabels"] = json!({"sfc": "head", "zone": "edge"});
    json!({"name": "<no value>", "deploymentIntentGroup": group,
        "intents": [], "all": clients,
        "others": [{"compositeApp": "chain-ca", "compositeAppVersion": "v1", "name": "chain-dig",
            "intents": [{"kind": "network-chains", "metadata": {"name": "bench-chain"},
                "spec": {"chainType": "Routing", "namespace": "default"},
                "children": {"client-selectors": [selector("first", "left", "elsewhere"),
                                                  selector("second", "left", "head"),
                                                  selector("third", "right", "tail")]}}]}],
        "facts": {}})
    .to_string()
}

/// hpa's tree (both controllers read every hpa intent of the group).
fn hpa_tree() -> String {
    let intents: Vec<Value> = (0..APPS)
        .map(|i| {
            json!({"kind": "hpa intent", "metadata": {"name": format!("{}-hpa", app(i))},
                "spec": {"app": app(i)},
                "children": {"hpa-resource-consumers": [{"kind": "hpa resource consumer",
                    "metadata": {"name": format!("{}-consumer", app(i))},
                    "spec": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app(i),
                        "container": app(i)},
                    "children": {"resource-requirements": [{"kind": "hpa resource requirement",
                        "metadata": {"name": "cpu"},
                        "spec": {"allocatable": true, "mandatory": true, "weight": 1,
                            "resource": {"name": "cpu", "requests": 1, "limits": 1}}}]}}]}})
        })
        .collect();
    tree("bench-hpa", intents)
}

/// Each cluster's nodes, for hpa-placement, which asks for them (`needs:
/// ["nodes"]`): one node per cluster, as `wasmco dev`'s virtual clusters
/// have.
fn nodes() -> ClusterNodes {
    (0..CLUSTERS)
        .map(|_| {
            vec![NodeInfo {
                name: "node-0".to_owned(),
                labels: vec![("kubernetes.io/os".to_owned(), "linux".to_owned())],
                available: vec![
                    ("cpu".to_owned(), 8),
                    ("memory".to_owned(), 34_359_738_368),
                    ("pods".to_owned(), 110),
                ],
            }]
        })
        .collect()
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:.0} us", d.as_secs_f64() * 1e6)
}

fn load(runtime: &Runtime, name: &str, kind: ControllerKind) -> Controller {
    let from_dir = std::env::var_os("WASMCO_BENCH_WASM_DIR").map(|dir| {
        let file = std::path::Path::new(&dir).join(format!("{}.wasm", name.replace('-', "_")));
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    });
    let wasm = match &from_dir {
        Some(wasm) => wasm,
        None => {
            wasmco_runtime::builtin::builtin(name)
                .unwrap_or_else(|| panic!("{name} is built in"))
                .wasm
        }
    };
    runtime
        .load(name, kind, wasm, &LimitOverrides::default())
        .expect("loads")
}

fn main() {
    let cache = tempfile::tempdir().expect("temp dir");
    let runtime = Runtime::new(RuntimeConfig::new(cache.path())).expect("runtime");
    let generic = load(&runtime, "generic-placement", ControllerKind::Placement);
    let apps: Vec<AppDraft> = (0..APPS)
        .map(|i| AppDraft::new(app(i), vec![deployment(&app(i))]))
        .collect();
    let mut draft = DraftContext::new(apps, clusters());
    let everywhere: Vec<Value> = (0..APPS)
        .map(|i| json!({"app": app(i), "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]}}))
        .collect();
    let placement = draft.placement_request(json!({ "appIntents": everywhere }).to_string());
    let edits: Vec<PlacementEdit> = generic.place(&placement).expect("generic placement").value;
    draft.apply_placement(&edits).expect("placed");

    let mut hpa_placement = draft.placement_request_with_nodes(hpa_tree(), Some(&nodes()));
    // hpa-placement keeps or drops what generic placement chose.
    hpa_placement.current = draft.placement_request(String::new()).current;
    let calls: Vec<(&str, Controller, Call)> = vec![
        (
            "gac",
            load(&runtime, "gac", ControllerKind::Action),
            action(&draft, gac_tree()),
        ),
        (
            "ovnaction",
            load(&runtime, "ovnaction", ControllerKind::Action),
            action(&draft, ovnaction_tree()),
        ),
        (
            "dtc",
            load(&runtime, "dtc", ControllerKind::Action),
            action(&draft, dtc_tree()),
        ),
        (
            "hpa-placement",
            load(&runtime, "hpa-placement", ControllerKind::Placement),
            Box::new(move |c: &Controller| {
                c.place(&hpa_placement).expect("hpa-placement").value.len()
            }),
        ),
        (
            "hpa-action",
            load(&runtime, "hpa-action", ControllerKind::Action),
            action(&draft, hpa_tree()),
        ),
        (
            "sfc",
            load(&runtime, "sfc", ControllerKind::Action),
            action(&draft, sfc_tree()),
        ),
        (
            "sfcclient",
            load(&runtime, "sfcclient", ControllerKind::Action),
            action(&draft, sfcclient_tree()),
        ),
    ];
    let baseline = |c: &Controller| c.place(&placement).expect("generic placement").value.len();

    println!(
        "built-in EMCO controllers, {APPS} apps x {CLUSTERS} clusters, against generic placement in the same run"
    );
    let iterations = 60;
    let only = std::env::var("WASMCO_BENCH_ONLY").ok();
    for (name, controller, call) in &calls {
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|o| o == *name))
        {
            continue;
        }
        if std::env::var_os("WASMCO_BENCH_LOOP").is_some() {
            let start = Instant::now();
            for _ in 0..2000 {
                std::hint::black_box(call(controller));
            }
            println!("{name}: {:?} per call", start.elapsed() / 2000);
            continue;
        }
        let edits = call(controller);
        assert!(
            edits > 0 || *name == "hpa-placement",
            "{name} changed nothing: the workload is wrong"
        );
        // Interleaved, so both see the same machine.
        let (mut theirs, mut generic_samples) = (Vec::new(), Vec::new());
        for i in 0..iterations + iterations / 10 {
            let start = Instant::now();
            std::hint::black_box(call(controller));
            let took = start.elapsed();
            let start = Instant::now();
            std::hint::black_box(baseline(&generic));
            let base = start.elapsed();
            if i >= iterations / 10 {
                theirs.push(took);
                generic_samples.push(base);
            }
        }
        let (took, base) = (median(theirs), median(generic_samples));
        println!(
            "  {name:<14} {:>9} ({edits} edits)  generic placement {:>9}  ratio {:.2} (target <= {TARGET_RATIO})",
            micros(took),
            micros(base),
            took.as_secs_f64() / base.as_secs_f64()
        );
    }
    // What any action call costs before the controller does anything: the
    // request (every app's placement on the 1,000 clusters and its
    // resources) passed in, and an intent of nothing parsed.
    let dtc = load(&runtime, "dtc", ControllerKind::Action);
    let nothing = tree(
        "bench-dtc",
        vec![
            json!({"kind": "traffic group intent", "metadata": {"name": "bench-dtc"},
                    "spec": {}, "children": {}}),
        ],
    );
    let floor = action(&draft, nothing);
    assert_eq!(floor(&dtc), 0, "an empty traffic group changes nothing");
    let floor_time = median(
        (0..iterations)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(floor(&dtc));
                start.elapsed()
            })
            .collect(),
    );
    println!(
        "  action floor   {:>9} (dtc with an empty traffic group: the request alone)",
        micros(floor_time)
    );
}

/// One controller's call; how many edits it made.
type Call = Box<dyn Fn(&Controller) -> usize>;

/// An action controller's call on the placed draft with `intent`.
fn action(draft: &DraftContext, intent: String) -> Call {
    let (request, _) = draft.action_request(intent);
    Box::new(move |c: &Controller| c.act(&request).expect("action").value.len())
}
