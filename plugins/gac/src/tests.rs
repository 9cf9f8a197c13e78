use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::{Value, json};
use wasmco_guest::testing::{FlatRequest, TestCluster};

use super::*;
use bindings::exports::wasmco::controller::action::{AppResources, ClusterResources};
use bindings::wasmco::controller::types::{AppPlacement, Resource};

const APP: &str = "operator";
const OTHER_APP: &str = "collectd";
const GAC_INTENT: &str = "operator-gac-intent";

/// Cluster 0 and 2 carry EMCO's example label; 2 is another provider's.
fn clusters() -> [TestCluster<'static>; 3] {
    let cluster = |provider, name, labels| TestCluster {
        provider,
        name,
        labels,
        kv: &[],
    };
    [
        cluster("provider1", "cluster1", &["edge-cluster1"]),
        cluster("provider1", "cluster2", &[]),
        cluster("provider2", "cluster3", &["edge-cluster1"]),
    ]
}

// ---------------------------------------------------------------------------
// EMCO's example documents, rendered as emcoctl renders them, made into the
// intent tree the host hands the controller.

/// The values of EMCO's example `values.yaml` (examples/test-gac/setup.sh,
/// examples/single-cluster/setup.sh).
fn value_of(name: &str) -> &'static str {
    match name {
        "ProjectName" => "proj1",
        "CompositeAppGac" => "gac-composite-app",
        "DeploymentIntent" => "collection-deployment-intent-group",
        "GacIntent" => GAC_INTENT,
        "App1" | "App3" => APP,
        "ClusterProvider" => "provider1",
        "Cluster" => "cluster1",
        "ClusterLabel" => "edge-cluster1",
        "HelmApp3" => "output/operator.tar.gz",
        "ConfigmapFile" => "info.json",
        _ => "unused",
    }
}

fn render(template: &str) -> String {
    let mut rendered = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{.") {
        rendered.push_str(&rest[..start]);
        let end = start + rest[start..].find("}}").unwrap();
        rendered.push_str(value_of(&rest[start + 3..end]));
        rest = &rest[end + 2..];
    }
    rendered.push_str(rest);
    rendered
}

/// Not in the mirror; our own stand-ins for the files EMCO's examples upload.
const INFO_JSON: &str = "{\"team\": \"emco\", \"players\": 4}\n";
const USER_INTERFACE: &str = "color.good=purple\ncolor.bad=yellow\n";

/// A file EMCO's examples upload, by the name they give it.
fn upload(name: &str) -> Vec<u8> {
    let text: &str = match name {
        "networkpolicy-web.yaml" => include_str!("../fixtures/emco/networkpolicy-web.yaml"),
        "networkpolicy-db.yaml" => include_str!("../fixtures/emco/networkpolicy-db.yaml"),
        "configmap-game.yaml" => include_str!("../fixtures/emco/configmap-game.yaml"),
        "configmap-team.yaml" => include_str!("../fixtures/emco/configmap-team.yaml"),
        "configmap-istio.yaml" => include_str!("../fixtures/emco/configmap-istio.yaml"),
        "secret-user.yaml" => include_str!("../fixtures/emco/secret-user.yaml"),
        "secret-auth.yaml" => include_str!("../fixtures/emco/secret-auth.yaml"),
        "secret-db.yaml" => include_str!("../fixtures/emco/secret-db.yaml"),
        "statefulset-etcd.yaml" => include_str!("../fixtures/emco/statefulset-etcd.yaml"),
        "deployment-web.yaml" => include_str!("../fixtures/emco/deployment-web.yaml"),
        "container-patch.yaml" => include_str!("../fixtures/emco/container-patch.yaml"),
        "hostalias-patch.yaml" => include_str!("../fixtures/emco/hostalias-patch.yaml"),
        "customization-dummy.yaml" => include_str!("../fixtures/emco/customization-dummy.yaml"),
        "data-game.yaml" => include_str!("../fixtures/emco/data-game.yaml"),
        "data-userexpiration.yaml" => include_str!("../fixtures/emco/data-userexpiration.yaml"),
        "info.json" => INFO_JSON,
        "data-userinterface.yaml" => USER_INTERFACE,
        // The legacy example uploads the app's Helm chart (gzip) as the template.
        "output/operator.tar.gz" => {
            return vec![
                0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xed, 0xbd,
            ];
        }
        other => panic!("no fixture for {other}"),
    };
    text.as_bytes().to_vec()
}

const TEST_GAC: &str = include_str!("../fixtures/emco/test-gac.yaml");
const TEST_STRATEGIC_MERGE: &str = include_str!("../fixtures/emco/test-strategic-merge.yaml");
const TEST_GAC_UPDATE: &str = include_str!("../fixtures/emco/test-gac-update.yaml");
const TEST_EXTERNAL_URL: &str =
    include_str!("../fixtures/emco/test-gac-patch-with-external-url.yaml");
const LEGACY_SINGLE_CLUSTER: &str = include_str!("../fixtures/emco/single-cluster-test-gac.yaml");

/// The documents of emcoctl files, rendered.
fn documents(files: &[&str]) -> Vec<Value> {
    files
        .iter()
        .flat_map(|text| {
            serde_norway::Deserializer::from_str(&render(text))
                .map(|document| Value::deserialize(document).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn uploaded(name: &str) -> Value {
    let base_name = name.rsplit('/').next().unwrap();
    json!({"name": base_name, "content": STANDARD.encode(upload(name))})
}

/// The intent tree of the gac documents among `files`, later documents
/// replacing earlier ones of the same name (as `emcoctl update` does).
fn tree_of(files: &[&str]) -> Value {
    let mut resources: Vec<Value> = Vec::new();
    for document in documents(files) {
        let anchor = document["resourceContext"]["anchor"].as_str().unwrap();
        let steps: Vec<&str> = anchor.split('/').collect();
        let Some(at) = steps.iter().position(|s| *s == "generic-k8s-intents") else {
            continue;
        };
        let below = &steps[at + 1..];
        match below {
            [_, "resources"] => {
                let mut node = json!({"kind": "resource", "metadata": document["metadata"],
                    "spec": document["spec"], "children": {"customizations": []}});
                if let Some(file) = document["file"].as_str() {
                    node["file"] = uploaded(file)["content"].clone();
                }
                let name = &node["metadata"]["name"];
                match resources
                    .iter_mut()
                    .find(|r| r["metadata"]["name"] == *name)
                {
                    Some(existing) => *existing = node,
                    None => resources.push(node),
                }
            }
            [_, "resources", resource, "customizations"] => {
                let node = json!({"kind": "customization", "metadata": document["metadata"],
                    "spec": document["spec"],
                    "files": document["files"].as_array().map_or(vec![], |files| files
                        .iter().map(|f| uploaded(f.as_str().unwrap())).collect::<Vec<_>>())});
                let parent = resources
                    .iter_mut()
                    .find(|r| r["metadata"]["name"] == *resource)
                    .unwrap();
                let list = parent["children"]["customizations"].as_array_mut().unwrap();
                let name = &node["metadata"]["name"];
                match list.iter_mut().find(|c| c["metadata"]["name"] == *name) {
                    Some(existing) => *existing = node,
                    None => list.push(node),
                }
            }
            _ => {}
        }
    }
    tree(resources)
}

fn tree(resources: Vec<Value>) -> Value {
    let intent = json!({"kind": "generic k8s intent", "metadata": {"name": GAC_INTENT},
        "children": {"resources": resources}});
    json!({"name": GAC_INTENT,
        "deploymentIntentGroup": {"project": "proj1", "compositeApp": "gac-composite-app",
            "compositeAppVersion": "v1", "name": "collection-deployment-intent-group"},
        "intents": [intent.clone()], "all": [intent]})
}

// ---------------------------------------------------------------------------
// Requests, and what the host makes of the edits.

fn record(manifest: &Value) -> Resource {
    Resource {
        api_version: manifest["apiVersion"].as_str().unwrap().into(),
        kind: manifest["kind"].as_str().unwrap().into(),
        name: manifest["metadata"]["name"].as_str().unwrap().into(),
        namespace: None,
        manifest: manifest.to_string(),
    }
}

/// A request for `tree`, with app `operator` on `placed` holding `base`,
/// except on the `differing` clusters.
fn request_with(
    tree: &Value,
    base: &[Value],
    differing: &[(u32, Vec<Value>)],
    placed: &[u32],
) -> ActionRequest {
    let flat = FlatRequest::new(&clusters(), &[APP, OTHER_APP]);
    ActionRequest {
        intent: tree.to_string(),
        apps: vec![flat.id(APP), flat.id(OTHER_APP)],
        clusters: wasmco_guest::cluster_table!(ClusterTable, flat),
        nodes: wasmco_guest::node_table!(
            crate::bindings::wasmco::controller::types::NodeTable,
            flat
        ),
        placements: vec![AppPlacement {
            app: flat.id(APP),
            clusters: placed.to_vec(),
            groups: Vec::new(),
        }],
        resources: vec![AppResources {
            app: flat.id(APP),
            base: base.iter().map(record).collect(),
            differing: differing
                .iter()
                .map(|(cluster, list)| ClusterResources {
                    cluster: *cluster,
                    resources: list.iter().map(record).collect(),
                })
                .collect(),
        }],
        strings: Strings {
            data: flat.data.clone(),
            ends: flat.ends.clone(),
        },
    }
}

fn request(tree: &Value, base: &[Value]) -> ActionRequest {
    request_with(tree, base, &[], &[0, 1, 2])
}

type Objects = BTreeMap<(String, String), Value>;

/// Each placed cluster's objects once the host applied `edits`, following
/// the host's rules: `all` adds to every cluster and patches every cluster
/// holding the object; `only` names clusters that must (patch) or must not
/// (add) hold it.
fn deployed(request: &ActionRequest, edits: &[ActionEdit]) -> BTreeMap<u32, Objects> {
    let key = |manifest: &Value| {
        (
            manifest["kind"].as_str().unwrap().to_owned(),
            manifest["metadata"]["name"].as_str().unwrap().to_owned(),
        )
    };
    let objects = |list: &[Resource]| -> Objects {
        list.iter()
            .map(|r| {
                let manifest: Value = serde_json::from_str(&r.manifest).unwrap();
                (key(&manifest), manifest)
            })
            .collect()
    };
    let app = &request.resources[0];
    let mut clusters: BTreeMap<u32, Objects> = request.placements[0]
        .clusters
        .iter()
        .map(|p| {
            let own = app.differing.iter().find(|d| d.cluster == *p);
            (*p, objects(own.map_or(&app.base, |d| &d.resources)))
        })
        .collect();
    for edit in edits {
        match edit {
            ActionEdit::Add(add) => {
                assert_eq!(add.app, APP);
                let manifest: Value = serde_json::from_str(&add.manifest).unwrap();
                let targets: Vec<u32> = match &add.scope {
                    ClusterScope::All => clusters.keys().copied().collect(),
                    ClusterScope::Only(list) => list.clone(),
                };
                for cluster in targets {
                    let objects = clusters.get_mut(&cluster).unwrap();
                    assert!(objects.insert(key(&manifest), manifest.clone()).is_none());
                }
            }
            ActionEdit::Patch(patch) => {
                assert_eq!(patch.app, APP);
                let target = (patch.target.kind.clone(), patch.target.name.clone());
                let targets: Vec<u32> = match &patch.scope {
                    ClusterScope::All => clusters
                        .iter()
                        .filter(|(_, objects)| objects.contains_key(&target))
                        .map(|(cluster, _)| *cluster)
                        .collect(),
                    ClusterScope::Only(list) => list.clone(),
                };
                assert!(!targets.is_empty());
                for cluster in targets {
                    let object = clusters
                        .get_mut(&cluster)
                        .unwrap()
                        .get_mut(&target)
                        .unwrap();
                    match &patch.patch {
                        Patch::JsonPatch(text) => {
                            let operations: json_patch::Patch = serde_json::from_str(text).unwrap();
                            json_patch::patch(object, &operations).unwrap();
                        }
                        Patch::MergePatch(text) => {
                            json_patch::merge(object, &serde_json::from_str(text).unwrap());
                        }
                    }
                }
            }
            ActionEdit::Remove(_) => panic!("gac removes nothing"),
        }
    }
    clusters
}

fn object<'a>(
    deployed: &'a BTreeMap<u32, Objects>,
    cluster: u32,
    kind: &str,
    name: &str,
) -> &'a Value {
    deployed[&cluster]
        .get(&(kind.to_owned(), name.to_owned()))
        .unwrap_or_else(|| panic!("cluster {cluster} has no {kind} {name}"))
}

fn has(deployed: &BTreeMap<u32, Objects>, cluster: u32, kind: &str, name: &str) -> bool {
    deployed[&cluster].contains_key(&(kind.to_owned(), name.to_owned()))
}

/// The operator app's etcd StatefulSet, as its Helm chart renders it.
fn etcd() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "etcd"},
        "spec": {"replicas": 3, "serviceName": "etcd",
            "selector": {"matchLabels": {"app": "etcd"}},
            "template": {"metadata": {"labels": {"app": "etcd"}},
                "spec": {"containers": [{"name": "etcd", "image": "quay.io/coreos/etcd:v3.5.0",
                    "env": [{"name": "ETCD_DATA_DIR", "value": "/var/lib/etcd"}]}]}}}})
}

fn yaml(name: &str) -> Value {
    serde_norway::from_slice(&upload(name)).unwrap()
}

fn b64(text: &str) -> String {
    STANDARD.encode(text)
}

fn fails(request: &ActionRequest) -> String {
    act(request).map(|_| ()).unwrap_err().message
}

// ---------------------------------------------------------------------------
// EMCO's examples.

#[test]
fn emco_test_gac_example_adds_and_patches_what_its_readme_lists() {
    let request = request(&tree_of(&[TEST_GAC]), &[etcd()]);
    let edits = act(&request).unwrap();
    let result = deployed(&request, &edits);
    for cluster in [0, 1, 2] {
        assert_eq!(
            object(&result, cluster, "NetworkPolicy", "netpol-web"),
            &yaml("networkpolicy-web.yaml")
        );
        let db = object(&result, cluster, "NetworkPolicy", "netpol-db");
        assert_eq!(db["spec"]["podSelector"]["matchLabels"]["role"], "database");

        let game = object(&result, cluster, "ConfigMap", "cm-game")["data"]
            .as_object()
            .unwrap();
        assert_eq!(game.len(), 5, "the readme's DATA column: {game:?}");
        assert_eq!(game["info.json"], INFO_JSON);
        assert_eq!(game["player_initial_lives"], "3");

        let team = &object(&result, cluster, "ConfigMap", "cm-team")["data"];
        assert_eq!(team.as_object().unwrap().len(), 4);
        assert_eq!(team["team_size"], "10");
        assert_eq!(
            team["game.properties"],
            "enemy.types=aliens,monsters\nplayer.maximum-lives=5\n"
        );
        assert_eq!(team["user-interface.properties"], USER_INTERFACE);

        let user = object(&result, cluster, "Secret", "secret-user");
        assert_eq!(user["type"], "kubernetes.io/service-account-token");
        assert_eq!(user["data"].as_object().unwrap().len(), 4);
        // Secret data is base64 of the uploaded file (itself base64 text).
        assert_eq!(
            user["data"]["data-userexpiration.yaml"],
            b64("MjAyMC0wOS0xM1QwNDozOToxMFo=\n")
        );

        let auth = &object(&result, cluster, "Secret", "secret-auth")["data"];
        assert_eq!(
            auth,
            &json!({"extra": "YmFyCg==", "EXPIRATION": b64("MjAyMC0wOS0xM1QwNDozOToxMFo=\n"),
                "USER_NAME": "YWRtaW4=", "PASSWORD": "MWYyZDFlMmU2N2Rm"})
        );
    }
    // sts-etcd: provider1's clusters labelled edge-cluster1, i.e. cluster 0
    // (cluster 2 has the label under another provider).
    assert_eq!(
        object(&result, 0, "StatefulSet", "etcd")["spec"]["replicas"],
        1
    );
    assert_eq!(
        object(&result, 1, "StatefulSet", "etcd")["spec"]["replicas"],
        3
    );
    assert_eq!(
        object(&result, 2, "StatefulSet", "etcd")["spec"]["replicas"],
        3
    );

    // New objects on every cluster go to the app's base, once each.
    let adds: Vec<&AddResource> = edits
        .iter()
        .filter_map(|e| match e {
            ActionEdit::Add(add) => Some(add),
            _ => None,
        })
        .collect();
    assert_eq!(adds.len(), 6);
    assert!(
        adds.iter()
            .all(|add| matches!(add.scope, ClusterScope::All))
    );
    assert!(edits.iter().any(|e| matches!(e,
        ActionEdit::Patch(p) if matches!(&p.scope, ClusterScope::Only(c) if c == &[0])
            && matches!(&p.patch, Patch::JsonPatch(text) if text.contains("/spec/replicas")))));
}

#[test]
fn emco_update_example_patches_the_replicas_again() {
    let request = request(&tree_of(&[TEST_GAC, TEST_GAC_UPDATE]), &[etcd()]);
    let result = deployed(&request, &act(&request).unwrap());
    assert_eq!(
        object(&result, 0, "StatefulSet", "etcd")["spec"]["replicas"],
        2
    );
    assert_eq!(
        object(&result, 1, "StatefulSet", "etcd")["spec"]["replicas"],
        3
    );
}

#[test]
fn emco_strategic_merge_example_merges_lists_by_key() {
    let request = request(&tree_of(&[TEST_STRATEGIC_MERGE]), &[etcd()]);
    let result = deployed(&request, &act(&request).unwrap());
    for cluster in [0, 1, 2] {
        let web = object(&result, cluster, "Deployment", "deploy-web");
        assert_eq!(
            web["spec"]["template"]["spec"]["containers"],
            json!([{"name": "nginx-ctr", "image": "nginx"}, {"name": "redis-ctr", "image": "redis"}])
        );
        assert_eq!(
            web["spec"]["selector"],
            json!({"matchLabels": {"app": "nginx"}})
        );
    }
    let patched = object(&result, 0, "StatefulSet", "etcd");
    assert_eq!(
        patched["spec"]["template"]["spec"]["hostAliases"],
        json!([{"ip": "1.2.3.4", "hostnames": ["host1"]}])
    );
    // The merge keeps what the patch does not mention.
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"],
        etcd()["spec"]["template"]["spec"]["containers"]
    );
    assert_eq!(object(&result, 1, "StatefulSet", "etcd"), &etcd());
    assert_eq!(object(&result, 2, "StatefulSet", "etcd"), &etcd());
}

#[test]
fn emco_unit_test_bodies_merge_like_emco() {
    // EMCO's action_test mocks (suite_test.go): base64 as EMCO stores them.
    let deployment = "YXBpVmVyc2lvbjogYXBwcy92MQ0Ka2luZDogRGVwbG95bWVudA0KbWV0YWRhdGE6DQogIG5hbWU6IGRlcGxveS13ZWINCnNwZWM6DQogIHNlbGVjdG9yOg0KICAgIG1hdGNoTGFiZWxzOg0KICAgICAgYXBwOiBuZ2lueA0KICB0ZW1wbGF0ZToNCiAgICBtZXRhZGF0YToNCiAgICAgIGxhYmVsczoNCiAgICAgICAgYXBwOiBuZ2lueA0KICAgIHNwZWM6DQogICAgICBjb250YWluZXJzOg0KICAgICAgLSBuYW1lOiBuZ2lueC1jdHINCiAgICAgICAgaW1hZ2U6IG5naW54DQo=";
    let container_patch = "c3BlYzoNCiAgdGVtcGxhdGU6DQogICAgc3BlYzoNCiAgICAgIGNvbnRhaW5lcnM6DQogICAgICAtIG5hbWU6IHJlZGlzLWN0cg0KICAgICAgICBpbWFnZTogcmVkaXMNCg==";
    let config_map = "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnTWFwCm1ldGFkYXRhOgogIG5hbWU6IGNtLXRlYW0KZGF0YToKICAjIHByb3BlcnR5LWxpa2Uga2V5czsgZWFjaCBrZXkgbWFwcyB0byBhIHNpbXBsZSB2YWx1ZQogIHRlYW1fc2l6ZTogIjUiCiAgdWlfcHJvcGVydGllc19maWxlX25hbWU6ICJ1c2VyLWludGVyZmFjZS5wcm9wZXJ0aWVzIg==";
    let data_game = "ZW5lbXkudHlwZXM9YWxpZW5zLG1vbnN0ZXJzCnBsYXllci5tYXhpbXVtLWxpdmVzPTUK";
    let data_ui_patch = "ZGF0YTogCiAgIHVzZXItaW50ZXJmYWNlLnByb3BlcnRpZXM6IHwKICAgIGNvbG9yLmdvb2Q9cHVycGxlCiAgICBjb2xvci5iYWQ9eWVsbG93CiAgICBhbGxvdy50ZXh0bW9kZT10cnVlICAgIAo=";
    let decode = |text: &str| -> Value {
        serde_norway::from_slice(&STANDARD.decode(text).unwrap()).unwrap()
    };
    let spec = json!({"clusterSpecific": "false",
        "clusterInfo": {"scope": "label", "clusterProvider": "provider-1", "cluster": "cluster-1",
            "clusterLabel": "edge-cluster-1", "mode": "allow"},
        "patchType": "merge",
        "configMapOptions": {"dataKeyOptions": [
            {"fileName": "data-game.yaml", "keyName": "game.properties"},
            {"fileName": "data-userinterface.yaml", "keyName": "user-interface.properties", "mergePatch": "true"}]}});
    let resource = |name: &str, kind: &str, files: Value| {
        json!({"metadata": {"name": name}, "spec": {"app": APP, "newObject": "false",
            "resourceGVK": {"apiVersion": "v1", "kind": kind, "name": name}},
            "children": {"customizations": [{"metadata": {"name": "c"}, "spec": spec, "files": files}]}})
    };
    let request = request(
        &tree(vec![
            resource(
                "deploy-web",
                "Deployment",
                json!([{"name": "container-patch.yaml", "content": container_patch}]),
            ),
            resource(
                "cm-team",
                "ConfigMap",
                json!([
                {"name": "data-game.yaml", "content": data_game},
                {"name": "data-userinterface.yaml", "content": data_ui_patch}]),
            ),
        ]),
        &[decode(deployment), decode(config_map)],
    );
    let result = deployed(&request, &act(&request).unwrap());
    let web = object(&result, 1, "Deployment", "deploy-web");
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Only the flagged file patches an existing ConfigMap: one key more.
    let team = object(&result, 1, "ConfigMap", "cm-team")["data"]
        .as_object()
        .unwrap();
    assert_eq!(team.len(), 3, "{team:?}");
    assert!(
        team["user-interface.properties"]
            .as_str()
            .unwrap()
            .starts_with("color.good=purple\n")
    );
}

#[test]
fn emco_external_url_example_is_refused_naming_the_customization() {
    let message = fails(&request(&tree_of(&[TEST_EXTERNAL_URL]), &[]));
    assert!(
        message.contains("generic k8s intent \"operator-gac-intent\""),
        "{message}"
    );
    assert!(
        message.contains("customization \"cm-istio-customization\""),
        "{message}"
    );
    assert!(message.contains("patchJson[0]"), "{message}");
    assert!(
        message.contains("http://192.168.121.29:30461/v2/cluster-providers/provider1"),
        "{message}"
    );
}

#[test]
fn emco_legacy_single_cluster_example_needs_a_real_template() {
    // It uploads the app's Helm chart as the ConfigMap's template, which
    // today's EMCO refuses too (its template must be YAML).
    let tree = tree_of(&[LEGACY_SINGLE_CLUSTER]);
    let message = fails(&request(&tree, &[]));
    assert!(message.contains("resource \"test-resources\""), "{message}");
    assert!(message.contains("template file is not text"), "{message}");

    // Without the chart, the ConfigMap starts empty, named by resourceGVK.
    let mut tree = tree;
    tree["intents"][0]["children"]["resources"][0]
        .as_object_mut()
        .unwrap()
        .remove("file");
    let request = request(&tree, &[]);
    let result = deployed(&request, &act(&request).unwrap());
    assert_eq!(
        object(&result, 2, "ConfigMap", "info-cm"),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info-cm"},
            "data": {"info.json": INFO_JSON}})
    );
}

// ---------------------------------------------------------------------------
// Schemas.

fn schema(segment: &str) -> jsonschema::Validator {
    let schema =
        wasmco_guest::testing::declared_schema(include_str!("../intents.json"), segment).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn schemas_accept_every_emco_example_body() {
    let resources = schema("resources");
    let customizations = schema("customizations");
    let mut seen = 0;
    for document in documents(&[
        TEST_GAC,
        TEST_STRATEGIC_MERGE,
        TEST_GAC_UPDATE,
        TEST_EXTERNAL_URL,
        LEGACY_SINGLE_CLUSTER,
    ]) {
        let anchor = document["resourceContext"]["anchor"].as_str().unwrap();
        let spec = &document["spec"];
        if anchor.ends_with("/resources") {
            assert!(resources.is_valid(spec), "{spec}");
            seen += 1;
        } else if anchor.ends_with("/customizations") {
            assert!(customizations.is_valid(spec), "{spec}");
            seen += 1;
        }
    }
    assert_eq!(seen, 25);
    assert!(schema("generic-k8s-intents").is_valid(&json!({})));
}

#[test]
fn schemas_refuse_what_emco_refuses() {
    let resources = schema("resources");
    let good = json!({"app": "operator", "newObject": "true",
        "resourceGVK": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}});
    assert!(resources.is_valid(&good));
    for broken in [
        json!({"newObject": "true", "resourceGVK": good["resourceGVK"]}),
        json!({"app": "operator", "newObject": "yes", "resourceGVK": good["resourceGVK"]}),
        json!({"app": "operator", "newObject": true, "resourceGVK": good["resourceGVK"]}),
        json!({"app": "operator", "newObject": "true"}),
        json!({"app": "operator", "newObject": "true",
            "resourceGVK": {"apiVersion": "v1", "kind": "", "name": "cm"}}),
    ] {
        assert!(!resources.is_valid(&broken), "{broken}");
    }

    let customizations = schema("customizations");
    let info = json!({"scope": "name", "clusterProvider": "provider1", "cluster": "cluster1", "mode": "allow"});
    let good = json!({"clusterSpecific": "true", "clusterInfo": info, "patchType": "json",
        "patchJson": [{"op": "remove", "path": "/spec/replicas", "value": ""}]});
    assert!(customizations.is_valid(&good));
    let with = |field: &str, value: Value| {
        let mut spec = good.clone();
        spec[field] = value;
        spec
    };
    let with_info = |field: &str, value: Value| {
        let mut info = info.clone();
        info[field] = value;
        with("clusterInfo", info)
    };
    for broken in [
        json!({"clusterSpecific": "true"}),
        json!({"clusterInfo": info}),
        with("clusterSpecific", json!("yes")),
        with("patchType", json!("strategic")),
        with(
            "patchJson",
            json!([{"op": "remove", "path": "/spec/replicas"}]),
        ),
        with(
            "patchJson",
            json!([{"op": "delete", "path": "/a", "value": 1}]),
        ),
        with_info("scope", json!("zone")),
        with_info("mode", json!("block")),
        with_info("clusterProvider", json!("")),
        // scope name, cluster-specific: the cluster is needed.
        with_info("cluster", json!("")),
        with(
            "configMapOptions",
            json!({"dataKeyOptions": [{"fileName": "a.yaml"}]}),
        ),
        with(
            "secretOptions",
            json!({"dataKeyOptions": [
            {"fileName": "a", "keyName": "b", "mergePatch": "maybe"}]}),
        ),
    ] {
        assert!(!customizations.is_valid(&broken), "{broken}");
    }
    // Not cluster-specific: clusterInfo is still required, but not its cluster.
    let mut loose = with_info("cluster", json!(""));
    loose["clusterSpecific"] = json!("false");
    assert!(customizations.is_valid(&loose));
    let label = json!({"clusterSpecific": "true",
        "clusterInfo": {"scope": "label", "clusterProvider": "p", "mode": "deny"}});
    assert!(!customizations.is_valid(&label));
}

// ---------------------------------------------------------------------------
// Cluster selection.

fn resource(name: &str, kind: &str, new_object: bool, customizations: Vec<Value>) -> Value {
    json!({"kind": "resource", "metadata": {"name": name},
        "spec": {"app": APP, "newObject": new_object.to_string(),
            "resourceGVK": {"apiVersion": "v1", "kind": kind, "name": name}},
        "children": {"customizations": customizations}})
}

fn customization(name: &str, spec: Value, files: &[(&str, &str)]) -> Value {
    json!({"kind": "customization", "metadata": {"name": name}, "spec": spec,
        "files": files.iter().map(|(name, text)| json!({"name": name, "content": b64(text)}))
            .collect::<Vec<_>>()})
}

fn everywhere() -> Value {
    json!({"clusterSpecific": "false",
        "clusterInfo": {"scope": "label", "clusterProvider": "provider1", "clusterLabel": "x", "mode": "allow"}})
}

fn on(scope: &str, provider: &str, which: &str, mode: &str) -> Value {
    let field = if scope == "name" {
        "cluster"
    } else {
        "clusterLabel"
    };
    json!({"clusterSpecific": "true",
        "clusterInfo": {"scope": scope, "clusterProvider": provider, field: which, "mode": mode}})
}

/// The clusters that end up with ConfigMap `cm` when its only customization is `spec`.
fn clusters_with_new_config_map(spec: Value) -> Vec<u32> {
    let tree = tree(vec![resource(
        "cm",
        "ConfigMap",
        true,
        vec![customization("c", spec, &[])],
    )]);
    let request = request(&tree, &[]);
    let result = deployed(&request, &act(&request).unwrap());
    (0..3)
        .filter(|&c| has(&result, c, "ConfigMap", "cm"))
        .collect()
}

#[test]
fn clusters_are_selected_by_name_or_label_of_their_provider() {
    assert_eq!(clusters_with_new_config_map(everywhere()), [0, 1, 2]);
    assert_eq!(
        clusters_with_new_config_map(on("name", "provider1", "cluster2", "allow")),
        [1]
    );
    assert_eq!(
        clusters_with_new_config_map(on("name", "provider2", "cluster2", "allow")),
        Vec::<u32>::new()
    );
    assert_eq!(
        clusters_with_new_config_map(on("label", "provider1", "edge-cluster1", "allow")),
        [0]
    );
    assert_eq!(
        clusters_with_new_config_map(on("label", "provider2", "edge-cluster1", "allow")),
        [2]
    );
    assert_eq!(
        clusters_with_new_config_map(on("label", "provider1", "no-such-label", "allow")),
        Vec::<u32>::new()
    );
}

#[test]
fn deny_selects_the_app_s_other_clusters() {
    assert_eq!(
        clusters_with_new_config_map(on("name", "provider1", "cluster2", "deny")),
        [0, 2]
    );
    assert_eq!(
        clusters_with_new_config_map(on("label", "provider1", "edge-cluster1", "deny")),
        [1, 2]
    );
    assert_eq!(
        clusters_with_new_config_map(on("label", "provider1", "no-such-label", "deny")),
        [0, 1, 2]
    );
}

#[test]
fn only_the_app_s_clusters_are_selected() {
    let tree = tree(vec![resource(
        "cm",
        "ConfigMap",
        true,
        vec![customization(
            "c",
            on("label", "provider2", "edge-cluster1", "deny"),
            &[],
        )],
    )]);
    let request = request_with(&tree, &[], &[], &[0, 1]);
    let edits = act(&request).unwrap();
    // Both of the app's clusters, so into its base.
    assert!(matches!(
        &edits[..],
        [ActionEdit::Add(AddResource {
            scope: ClusterScope::All,
            ..
        })]
    ));
}

// ---------------------------------------------------------------------------
// New objects.

#[test]
fn a_new_object_without_customizations_goes_to_every_cluster() {
    let mut node = resource("netpol-web", "NetworkPolicy", true, vec![]);
    node["file"] = json!(STANDARD.encode(upload("networkpolicy-web.yaml")));
    let request = request(&tree(vec![node]), &[]);
    let edits = act(&request).unwrap();
    assert!(matches!(
        &edits[..],
        [ActionEdit::Add(AddResource {
            scope: ClusterScope::All,
            ..
        })]
    ));
    let result = deployed(&request, &edits);
    assert_eq!(
        object(&result, 1, "NetworkPolicy", "netpol-web"),
        &yaml("networkpolicy-web.yaml")
    );
}

#[test]
fn customizations_selecting_one_cluster_all_apply_there_in_order() {
    let tree = tree(vec![resource(
        "cm",
        "ConfigMap",
        true,
        vec![
            customization("all", everywhere(), &[("a.txt", "first\n")]),
            customization(
                "edge",
                json!({"clusterSpecific": "true",
            "clusterInfo": {"scope": "label", "clusterProvider": "provider1",
                "clusterLabel": "edge-cluster1", "mode": "allow"},
            "patchType": "json",
            "patchJson": [{"op": "replace", "path": "/data/a.txt", "value": "edge\n"}]}),
                &[("b.txt", "second\n")],
            ),
        ],
    )]);
    let request = request(&tree, &[]);
    let edits = act(&request).unwrap();
    assert_eq!(
        edits.len(),
        2,
        "one object per distinct set of customizations"
    );
    let result = deployed(&request, &edits);
    assert_eq!(
        object(&result, 0, "ConfigMap", "cm")["data"],
        json!({"a.txt": "edge\n", "b.txt": "second\n"})
    );
    for cluster in [1, 2] {
        assert_eq!(
            object(&result, cluster, "ConfigMap", "cm")["data"],
            json!({"a.txt": "first\n"})
        );
    }
}

#[test]
fn a_later_customization_may_set_a_data_key_again_but_not_a_template_key() {
    let later = |file: &str| {
        tree(vec![resource(
            "cm",
            "ConfigMap",
            true,
            vec![
                customization("one", everywhere(), &[("k", "1")]),
                customization("two", everywhere(), &[(file, "2")]),
            ],
        )])
    };
    let request = request(&later("k"), &[]);
    let result = deployed(&request, &act(&request).unwrap());
    assert_eq!(
        object(&result, 0, "ConfigMap", "cm")["data"],
        json!({"k": "2"})
    );

    let mut game = resource(
        "cm-game",
        "ConfigMap",
        true,
        vec![customization(
            "c",
            everywhere(),
            &[("game.properties", "x=1\n")],
        )],
    );
    game["file"] = json!(STANDARD.encode(upload("configmap-game.yaml")));
    let message = fails(&request_with(&tree(vec![game]), &[], &[], &[0]));
    assert!(message.contains("customization \"c\""), "{message}");
    assert!(
        message.contains("ConfigMap cm-game already has a key \"game.properties\""),
        "{message}"
    );
}

#[test]
fn data_keys_follow_the_options_and_kubernetes_rules() {
    let spec = |options: Value| {
        let mut spec = everywhere();
        spec["configMapOptions"] = json!({"dataKeyOptions": options});
        spec
    };
    let bad = tree(vec![resource(
        "cm",
        "ConfigMap",
        true,
        vec![customization(
            "c",
            spec(json!([{"fileName": "a.yaml", "keyName": "not/valid"}])),
            &[("a.yaml", "x")],
        )],
    )]);
    let message = fails(&request(&bad, &[]));
    assert!(
        message.contains("data key \"not/valid\" (of file \"a.yaml\")"),
        "{message}"
    );

    let twice = tree(vec![resource(
        "cm",
        "ConfigMap",
        true,
        vec![customization(
            "c",
            spec(
                json!([{"fileName": "a.yaml", "keyName": "same"}, {"fileName": "b.yaml", "keyName": "same"}]),
            ),
            &[("a.yaml", "x"), ("b.yaml", "y")],
        )],
    )]);
    assert!(fails(&request(&twice, &[])).contains("already has a key \"same\""));

    // Secret options come after the ConfigMap options, so they win.
    let mut both = spec(json!([{"fileName": "a.yaml", "keyName": "from-cm"}]));
    both["secretOptions"] =
        json!({"dataKeyOptions": [{"fileName": "a.yaml", "keyName": "from-secret"}]});
    let tree = tree(vec![resource(
        "s",
        "Secret",
        true,
        vec![customization("c", both, &[("a.yaml", "pw")])],
    )]);
    let request = request(&tree, &[]);
    let result = deployed(&request, &act(&request).unwrap());
    assert_eq!(
        object(&result, 0, "Secret", "s"),
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": "s"},
            "data": {"from-secret": b64("pw")}})
    );
}

#[test]
fn a_config_map_keeps_non_text_files_in_binary_data() {
    let tree = tree(vec![resource(
        "cm",
        "ConfigMap",
        true,
        vec![json!({
        "metadata": {"name": "c"}, "spec": everywhere(),
        "files": [{"name": "blob", "content": STANDARD.encode([0xff, 0x00, 0x9c])},
            // EMCO keeps no empty upload.
            {"name": "empty", "content": ""}]})],
    )]);
    let request = request(&tree, &[]);
    let result = deployed(&request, &act(&request).unwrap());
    let cm = object(&result, 0, "ConfigMap", "cm");
    assert_eq!(
        cm["binaryData"],
        json!({"blob": STANDARD.encode([0xff, 0x00, 0x9c])})
    );
    assert!(cm.get("data").is_none());
}

#[test]
fn new_object_templates_are_checked() {
    let with_file = |kind: &str, file: Option<&str>| {
        let mut node = resource("x", kind, true, vec![]);
        if let Some(file) = file {
            node["file"] = json!(b64(file));
        }
        fails(&request(&tree(vec![node]), &[]))
    };
    let message = with_file("NetworkPolicy", None);
    assert!(
        message.contains("resource \"x\": newObject is true but no template file"),
        "{message}"
    );
    let message = with_file(
        "ConfigMap",
        Some("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n"),
    );
    assert!(
        message.contains("the template file has no kind ConfigMap"),
        "{message}"
    );
    let message = with_file("Deployment", Some("kind: Deployment\nmetadata: {}\n"));
    assert!(
        message.contains("has no apiVersion, metadata.name"),
        "{message}"
    );
    let message = with_file("Deployment", Some("- just\n- a list\n"));
    assert!(
        message.contains("the template file is not a YAML map"),
        "{message}"
    );
}

#[test]
fn a_new_object_a_cluster_already_holds_is_refused() {
    let mut node = resource(
        "etcd",
        "StatefulSet",
        true,
        vec![customization(
            "c",
            on("name", "provider1", "cluster2", "allow"),
            &[],
        )],
    );
    node["file"] = json!(b64(&etcd().to_string()));
    let message = fails(&request(&tree(vec![node]), &[etcd()]));
    assert!(
        message.contains(
            "app \"operator\" already has StatefulSet etcd on cluster provider1+cluster2"
        ),
        "{message}"
    );
}

#[test]
fn a_merge_customization_of_a_new_config_map_patches_with_its_flagged_files() {
    let mut spec = everywhere();
    spec["patchType"] = json!("merge");
    spec["configMapOptions"] = json!({"dataKeyOptions": [
        {"fileName": "labels.yaml", "keyName": "labels.yaml", "mergePatch": "true"}]});
    let node = resource(
        "cm",
        "ConfigMap",
        true,
        vec![customization(
            "c",
            spec,
            &[
                ("labels.yaml", "metadata:\n  labels:\n    tier: edge\n"),
                ("k", "v"),
            ],
        )],
    );
    let request = request(&tree(vec![node]), &[]);
    let result = deployed(&request, &act(&request).unwrap());
    assert_eq!(
        object(&result, 0, "ConfigMap", "cm"),
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {"tier": "edge"}}, "data": {"k": "v"}})
    );
}

// ---------------------------------------------------------------------------
// Existing objects.

#[test]
fn an_existing_object_is_found_whatever_the_case_of_its_kind() {
    let node = resource(
        "etcd",
        "statefulset",
        false,
        vec![customization(
            "c",
            json!({
        "clusterSpecific": "false", "clusterInfo": {"scope": "name", "clusterProvider": "p", "mode": "allow"},
        "patchType": "json", "patchJson": [{"op": "replace", "path": "/spec/replicas", "value": 5}]}),
            &[],
        )],
    );
    let request = request(&tree(vec![node]), &[etcd()]);
    let edits = act(&request).unwrap();
    match &edits[..] {
        [ActionEdit::Patch(patch)] => {
            assert_eq!(patch.target.kind, "StatefulSet");
            assert!(matches!(patch.scope, ClusterScope::All));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        object(&deployed(&request, &edits), 2, "StatefulSet", "etcd")["spec"]["replicas"],
        5
    );
}

#[test]
fn an_existing_object_missing_from_the_selected_clusters_is_an_error() {
    let patch = json!({"clusterSpecific": "true",
        "clusterInfo": {"scope": "name", "clusterProvider": "provider1", "cluster": "cluster2", "mode": "allow"},
        "patchType": "json", "patchJson": [{"op": "replace", "path": "/spec/replicas", "value": 5}]});
    let node = resource(
        "etcd",
        "StatefulSet",
        false,
        vec![customization("c", patch, &[])],
    );
    // Only cluster 0 has etcd (the others differ: no etcd).
    let request = request_with(
        &tree(vec![node.clone()]),
        &[etcd()],
        &[(1, vec![]), (2, vec![])],
        &[0, 1, 2],
    );
    let message = fails(&request);
    assert!(
        message.contains("resource \"etcd\", customization \"c\""),
        "{message}"
    );
    assert!(
        message.contains("app \"operator\" has no StatefulSet etcd on the clusters the customization selects (provider1+cluster2)"),
        "{message}"
    );
    // Selected clusters lacking it are skipped while another has it, as in EMCO.
    let mut wide = node;
    wide["children"]["customizations"][0]["spec"]["clusterSpecific"] = json!("false");
    let request = request_with(
        &tree(vec![wide]),
        &[etcd()],
        &[(1, vec![]), (2, vec![])],
        &[0, 1, 2],
    );
    let edits = act(&request).unwrap();
    assert!(matches!(&edits[..], [ActionEdit::Patch(p)] if matches!(p.scope, ClusterScope::All)));
    let result = deployed(&request, &edits);
    assert_eq!(
        object(&result, 0, "StatefulSet", "etcd")["spec"]["replicas"],
        5
    );
    assert!(!has(&result, 1, "StatefulSet", "etcd"));
}

#[test]
fn an_existing_object_needs_a_patch_type() {
    let node = resource(
        "etcd",
        "StatefulSet",
        false,
        vec![customization("c", everywhere(), &[])],
    );
    let message = fails(&request(&tree(vec![node]), &[etcd()]));
    assert!(
        message.contains("customization \"c\": the resource patches an existing object"),
        "{message}"
    );
}

#[test]
fn a_strategic_merge_is_computed_per_version_of_the_object() {
    let mut scaled = etcd();
    scaled["spec"]["replicas"] = json!(7);
    let mut spec = everywhere();
    spec["patchType"] = json!("merge");
    let node = resource(
        "etcd",
        "StatefulSet",
        false,
        vec![customization(
            "c",
            spec,
            &[(
                "env.yaml",
                "spec:\n  template:\n    spec:\n      containers:\n      - name: etcd\n        env:\n        - name: ETCD_DEBUG\n          value: \"1\"\n",
            )],
        )],
    );
    let request = request_with(
        &tree(vec![node]),
        &[etcd()],
        &[(2, vec![scaled])],
        &[0, 1, 2],
    );
    let edits = act(&request).unwrap();
    assert_eq!(edits.len(), 2, "one patch per distinct version: {edits:?}");
    let result = deployed(&request, &edits);
    for (cluster, replicas) in [(0, 3), (1, 3), (2, 7)] {
        let etcd = object(&result, cluster, "StatefulSet", "etcd");
        assert_eq!(etcd["spec"]["replicas"], replicas);
        assert_eq!(
            etcd["spec"]["template"]["spec"]["containers"][0]["env"],
            json!([{"name": "ETCD_DATA_DIR", "value": "/var/lib/etcd"}, {"name": "ETCD_DEBUG", "value": "1"}])
        );
    }
}

#[test]
fn patches_of_one_call_build_on_each_other() {
    let json_then_merge = vec![
        customization(
            "scale",
            json!({"clusterSpecific": "false",
            "clusterInfo": {"scope": "name", "clusterProvider": "p", "mode": "allow"},
            "patchType": "json", "patchJson": [{"op": "replace", "path": "/spec/replicas", "value": 1}]}),
            &[],
        ),
        customization(
            "alias",
            {
                let mut spec = on("name", "provider1", "cluster1", "allow");
                spec["patchType"] = json!("merge");
                spec
            },
            &[(
                "p.yaml",
                "spec:\n  template:\n    spec:\n      hostAliases:\n      - ip: 1.2.3.4\n",
            )],
        ),
    ];
    let request = request(
        &tree(vec![resource(
            "etcd",
            "StatefulSet",
            false,
            json_then_merge,
        )]),
        &[etcd()],
    );
    let result = deployed(&request, &act(&request).unwrap());
    let first = object(&result, 0, "StatefulSet", "etcd");
    assert_eq!(first["spec"]["replicas"], 1);
    assert_eq!(
        first["spec"]["template"]["spec"]["hostAliases"],
        json!([{"ip": "1.2.3.4"}])
    );
    assert_eq!(
        object(&result, 1, "StatefulSet", "etcd")["spec"]["replicas"],
        1
    );
}

#[test]
fn a_json_patch_that_fails_names_the_cluster() {
    let node = resource(
        "etcd",
        "StatefulSet",
        false,
        vec![customization(
            "c",
            json!({
        "clusterSpecific": "false", "clusterInfo": {"scope": "name", "clusterProvider": "p", "mode": "allow"},
        "patchType": "json", "patchJson": [{"op": "replace", "path": "/spec/nothing/here", "value": 1}]}),
            &[],
        )],
    );
    let message = fails(&request(&tree(vec![node]), &[etcd()]));
    assert!(
        message.contains("customization \"c\": on cluster provider1+cluster1: patchJson"),
        "{message}"
    );

    // EMCO requires `value` even for `remove`; the operation ignores it.
    let remove = json!({"clusterSpecific": "false",
        "clusterInfo": {"scope": "name", "clusterProvider": "p", "mode": "allow"},
        "patchType": "json", "patchJson": [{"op": "remove", "path": "/spec/replicas", "value": ""}]});
    let node = resource(
        "etcd",
        "StatefulSet",
        false,
        vec![customization("c", remove, &[])],
    );
    let request = request(&tree(vec![node]), &[etcd()]);
    let result = deployed(&request, &act(&request).unwrap());
    assert!(
        object(&result, 0, "StatefulSet", "etcd")["spec"]
            .get("replicas")
            .is_none()
    );
}

#[test]
fn an_app_outside_the_composite_app_is_refused() {
    let mut node = resource("cm", "ConfigMap", true, vec![]);
    node["spec"]["app"] = json!("firewall");
    let message = fails(&request(&tree(vec![node]), &[]));
    assert!(
        message.contains("resource \"cm\": app \"firewall\" is not an app of the composite app"),
        "{message}"
    );
}

#[test]
fn an_app_placed_nowhere_gets_nothing() {
    let mut node = resource("cm", "ConfigMap", true, vec![]);
    node["spec"]["app"] = json!(OTHER_APP);
    assert!(act(&request(&tree(vec![node]), &[])).unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// Strategic merge.

fn merged(kind: &str, object: Value, patch: Value) -> Result<Value, String> {
    let mut object = object;
    strategic::apply(&mut object, &patch, kind).map(|()| object)
}

#[test]
fn strategic_merge_honours_merge_keys_and_directives() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a"]},
        "spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
            {"name": "side", "image": "side:1"}],
            "tolerations": [{"key": "a"}]}});
    let result = merged(
        "Pod",
        pod.clone(),
        json!({
        "metadata": {"finalizers": ["b", "a"]},
        "spec": {"containers": [
            {"name": "app", "image": "app:2", "ports": [{"containerPort": 80, "name": "http"}]},
            {"name": "side", "$patch": "delete"},
            {"name": "new", "image": "new:1"}],
            "tolerations": [{"key": "b"}]}}),
    )
    .unwrap();
    assert_eq!(result["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(
        result["spec"]["containers"],
        json!([{"name": "app", "image": "app:2",
                "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]},
               {"name": "new", "image": "new:1"}])
    );
    // A list without a merge strategy is replaced.
    assert_eq!(result["spec"]["tolerations"], json!([{"key": "b"}]));

    let replaced = merged(
        "Pod",
        pod.clone(),
        json!({"spec": {"containers": [
        {"$patch": "replace"}, {"name": "only", "image": "only:1"}]}}),
    )
    .unwrap();
    assert_eq!(
        replaced["spec"]["containers"],
        json!([{"name": "only", "image": "only:1"}])
    );

    let cleared = merged(
        "Pod",
        pod.clone(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
        "spec": {"containers": null, "$setElementOrder/containers": [{"name": "app"}]}}),
    )
    .unwrap();
    assert_eq!(cleared["metadata"]["finalizers"], json!([]));
    assert_eq!(cleared["spec"], json!({"tolerations": [{"key": "a"}]}));

    let retained = merged(
        "Pod",
        pod.clone(),
        json!({"spec": {"$retainKeys": ["containers"]}}),
    )
    .unwrap();
    assert_eq!(retained["spec"].as_object().unwrap().len(), 1);

    let message = merged(
        "Pod",
        pod.clone(),
        json!({"spec": {"containers": [{"image": "x"}]}}),
    )
    .unwrap_err();
    assert!(
        message.contains("containers: an item has no merge key \"name\""),
        "{message}"
    );
}

#[test]
fn strategic_merge_of_an_unknown_kind_replaces_lists() {
    let custom = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"containers": [{"name": "a"}], "size": 1, "gone": true}});
    let result = merged(
        "Widget",
        custom,
        json!({"spec": {"containers": [{"name": "b"}], "gone": null}}),
    )
    .unwrap();
    assert_eq!(
        result["spec"],
        json!({"containers": [{"name": "b"}], "size": 1})
    );
}

#[test]
fn strategic_merge_reaches_pod_templates_of_every_workload() {
    let patch = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
        {"name": "job", "image": "job:2"}]}}}}}});
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
            {"name": "job", "image": "job:1", "args": ["run"]}, {"name": "log", "image": "log:1"}]}}}}}});
    let result = merged("CronJob", cron, patch).unwrap();
    assert_eq!(
        result["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
        json!([{"name": "job", "image": "job:2", "args": ["run"]}, {"name": "log", "image": "log:1"}])
    );
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
    let result = merged(
        "Service",
        service,
        json!({"spec": {"ports": [{"port": 443}]}}),
    )
    .unwrap();
    assert_eq!(
        result["spec"]["ports"],
        json!([{"port": 80, "targetPort": 8080}, {"port": 443}])
    );
}
