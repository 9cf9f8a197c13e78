//! The REST API through a real socket: the `wasmco serve` binary, started,
//! killed and restarted on one data directory.

use reqwest::blocking::multipart;
use serde_json::json;

use crate::support::server::{Server, doc, expect, fixture, raw_request, refused, wasm};

const P: &str = "/v2/projects/proj1";
const CA: &str = "/v2/projects/proj1/composite-apps/vfw/v1";
const DIG: &str = "/v2/projects/proj1/composite-apps/vfw/v1/deployment-intent-groups/dig1";

pub fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (name, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Creates one of everything, checking each create answers 201 with the body.
fn populate(server: &Server) {
    let provider = expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    assert_eq!(provider["metadata"]["name"], "edge");
    for cluster in ["c1", "c2"] {
        expect(
            server.upload(
                "/v2/cluster-providers/edge/clusters",
                doc(cluster, json!({})),
                Some(fixture("kubeconfig.yaml")),
            ),
            201,
        );
    }
    expect(
        server.post(
            "/v2/cluster-providers/edge/clusters/c1/labels",
            json!({"clusterLabel": "edge-east"}),
        ),
        201,
    );
    expect(
        server.post(
            "/v2/cluster-providers/edge/clusters/c1/kv-pairs",
            doc(
                "capacity",
                json!({"kv": [{"cpu": "16"}, {"memory": "64Gi"}]}),
            ),
        ),
        201,
    );
    let controller = expect(
        server.upload(
            "/v2/controllers",
            doc(
                "gac",
                json!({"type": "action", "priority": 10, "limits": {"deadlineMs": 500}}),
            ),
            Some(wasm("gac.wasm")),
        ),
        201,
    );
    assert!(
        controller["status"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(controller["status"]["limits"]["deadlineMs"], 500);
    assert_eq!(controller["status"]["type"], "action");
    assert!(controller["status"]["size"].as_u64().unwrap() > 10_000);
    expect(server.post("/v2/projects", doc("proj1", json!({}))), 201);
    expect(
        server.post(
            &format!("{P}/composite-apps"),
            doc("vfw", json!({"compositeAppVersion": "v1"})),
        ),
        201,
    );
    expect(
        server.upload(
            &format!("{CA}/apps"),
            doc("web", json!({})),
            Some(fixture("web.yaml")),
        ),
        201,
    );
    let bundle = tgz(&[
        (
            "db/deployment.yaml",
            b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db}\n",
        ),
        ("README", b"ignored"),
    ]);
    expect(
        server.upload(&format!("{CA}/apps"), doc("db", json!({})), Some(bundle)),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/apps/web/dependency"),
            doc(
                "needs-db",
                json!({"app": "db", "opStatus": "Ready", "wait": 5}),
            ),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/composite-profiles"),
            doc("vfw_composite-profile", json!({})),
        ),
        201,
    );
    expect(
        server.upload(
            &format!("{CA}/composite-profiles/vfw_composite-profile/profiles"),
            doc("web-profile", json!({"app": "web"})),
            Some(b"Deployment/web: {spec: {replicas: 2}}\n".to_vec()),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/deployment-intent-groups"),
            doc(
                "dig1",
                json!({"compositeProfile": "vfw_composite-profile", "version": "r1",
                "overrideValues": [{"app": "web", "values": {"replicas": "3"}}]}),
            ),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/generic-placement-intents"),
            doc("gpi", json!({})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/generic-placement-intents/gpi/app-intents"),
            doc("web-place", json!({"app": "web", "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": "edge-east"}]}})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/controller-intents"),
            doc(
                "gac-intent",
                json!({"customizations": [{"app": "web", "target": {"kind": "Deployment", "name": "web"},
                    "patchType": "merge", "patch": {"spec": {"replicas": 2}}}]}),
            ),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "gac": "gac-intent"}}),
            ),
        ),
        201,
    );
}

/// Every item path created by [`populate`], children after parents.
fn items() -> Vec<String> {
    [
        "/v2/cluster-providers/edge",
        "/v2/cluster-providers/edge/clusters/c1",
        "/v2/cluster-providers/edge/clusters/c1/labels/edge-east",
        "/v2/cluster-providers/edge/clusters/c1/kv-pairs/capacity",
        "/v2/controllers/gac",
        P,
        CA,
        &format!("{CA}/apps/web"),
        &format!("{CA}/apps/db"),
        &format!("{CA}/apps/web/dependency/needs-db"),
        &format!("{CA}/composite-profiles/vfw_composite-profile"),
        &format!("{CA}/composite-profiles/vfw_composite-profile/profiles/web-profile"),
        DIG,
        &format!("{DIG}/generic-placement-intents/gpi"),
        &format!("{DIG}/generic-placement-intents/gpi/app-intents/web-place"),
        &format!("{DIG}/controller-intents/gac-intent"),
        &format!("{DIG}/intents/intents"),
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn every_resource_round_trips_and_survives_restart_and_kill() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    expect(server.get("/healthz"), 200);
    populate(&server);
    // Every resource read with GET goes back unchanged with PUT (multipart
    // ones with their metadata part only: the file stays).
    for item in items() {
        let body = expect(server.get(&item), 200);
        let multipart = [
            "/clusters/c1",
            "/controllers/",
            "/apps/web",
            "/apps/db",
            "/profiles/",
        ]
        .iter()
        .any(|m| {
            item.contains(m)
                && !item.contains("/labels")
                && !item.contains("/kv-pairs")
                && !item.contains("/dependency")
        });
        let put = if multipart {
            server.put_metadata(&item, body.clone())
        } else {
            server.put(&item, body.clone())
        };
        assert_eq!(expect(put, 200), body, "{item}");
    }
    // Lists, and the label filter.
    assert_eq!(
        expect(server.get("/v2/cluster-providers/edge/clusters"), 200)
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let east = expect(
        server.get("/v2/cluster-providers/edge/clusters?label=edge-east"),
        200,
    );
    // EMCO answers a label query with the clusters' names.
    assert_eq!(east, json!(["c1"]));
    // A composite profile's profile by its app.
    let profiles = format!("{CA}/composite-profiles/vfw_composite-profile/profiles");
    let web = expect(server.get(&format!("{profiles}?app=web")), 200);
    assert_eq!(web["metadata"]["name"], "web-profile", "{web}");
    refused(
        server.get(&format!("{profiles}?app=nope")),
        404,
        Some("app"),
        "\"nope\"",
    );
    // And a key of a cluster's key-value pairs with its value.
    let kv = "/v2/cluster-providers/edge/clusters/c1/kv-pairs/capacity";
    assert_eq!(
        expect(server.get(&format!("{kv}?key=memory")), 200),
        json!({"value": "64Gi"})
    );
    refused(
        server.get(&format!("{kv}?key=disk")),
        404,
        Some("key"),
        "no key \"disk\"",
    );
    refused(
        server.get("/v2/cluster-providers/edge?key=cpu"),
        400,
        Some("key"),
        "key-value pairs",
    );
    assert_eq!(
        expect(server.get(&format!("{CA}/apps")), 200)
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The kubeconfig's credentials never come back.
    let cluster = server
        .get("/v2/cluster-providers/edge/clusters/c1")
        .text()
        .unwrap();
    assert!(!cluster.contains("s3cr3t"), "{cluster}");
    // Restart on the same directory.
    drop(server);
    let server = Server::start(data.path());
    for item in items() {
        expect(server.get(&item), 200);
    }
    // An acknowledged write survives SIGKILL.
    expect(
        server.post("/v2/projects", doc("after-kill", json!({}))),
        201,
    );
    server.kill();
    let server = Server::start(data.path());
    expect(server.get("/v2/projects/after-kill"), 200);
    // The stored controller was loaded again: its body still describes it.
    let gac = expect(server.get("/v2/controllers/gac"), 200);
    assert_eq!(gac["spec"]["priority"], 10);
}

#[test]
fn update_and_delete_follow_references_and_children() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    populate(&server);
    // PUT replaces; a rename is refused.
    let updated = expect(server.put(P, doc("proj1", json!({"owner": "team-a"}))), 200);
    assert_eq!(updated["spec"]["owner"], "team-a");
    assert_eq!(expect(server.get(P), 200)["spec"]["owner"], "team-a");
    refused(
        server.put(P, doc("proj2", json!({}))),
        400,
        Some("metadata.name"),
        "cannot be renamed",
    );
    refused(
        server.put("/v2/projects/ghost", doc("ghost", json!({}))),
        404,
        None,
        "project ghost not found",
    );
    // Duplicates.
    refused(
        server.post("/v2/projects", doc("proj1", json!({}))),
        409,
        Some("metadata.name"),
        "already exists",
    );
    // In use: the controller by the DIG's intents, the app by the profile, intent and dependency.
    refused(
        server.delete("/v2/controllers/gac"),
        409,
        None,
        "deployment intent proj1/vfw/v1/dig1/intents",
    );
    let app = server.delete(&format!("{CA}/apps/db"));
    refused(app, 409, None, "app dependency proj1/vfw/v1/web/needs-db");
    refused(
        server.delete("/v2/cluster-providers/edge"),
        409,
        None,
        "cluster provider edge is in use",
    );
    // Children: a project with composite apps stays.
    refused(server.delete(P), 409, None, "composite app proj1/vfw/v1");
    // Deleting in reverse order works, each answered 204 and then gone.
    for item in items().into_iter().rev() {
        if item.ends_with("/labels/edge-east") || item.ends_with("/kv-pairs/capacity") {
            continue; // deleted with their cluster
        }
        if item == "/v2/cluster-providers/edge" {
            expect(server.delete("/v2/cluster-providers/edge/clusters/c2"), 204);
        }
        expect(server.delete(&item), 204);
        refused(server.get(&item), 404, None, "not found");
    }
}

#[test]
fn bad_requests_get_clear_json_errors() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    populate(&server);
    // Names: EMCO's rule, stated in the error.
    refused(
        server.post("/v2/projects", doc("-bad", json!({}))),
        400,
        Some("metadata.name"),
        "starting and ending with a letter or digit",
    );
    refused(
        server.post("/v2/projects", doc(&"a".repeat(129), json!({}))),
        400,
        Some("metadata.name"),
        "128",
    );
    // A query string its route cannot read.
    refused(
        server.get("/v2/projects?label=a&label=b"),
        400,
        None,
        "bad query",
    );
    // Malformed JSON, unknown fields, wrong content type.
    let broken = server
        .client
        .post(server.url("/v2/projects"))
        .header("content-type", "application/json")
        .body("{\"metadata\":")
        .send()
        .unwrap();
    refused(broken, 400, Some("body"), "not valid JSON");
    let not_json = server
        .client
        .post(server.url("/v2/projects"))
        .header("content-type", "application/json")
        .body("[1, 2]")
        .send()
        .unwrap();
    refused(not_json, 400, Some("body"), "must be a JSON object");
    refused(
        server.post(
            "/v2/projects",
            json!({"metadata": {"name": "x", "nmae": "y"}}),
        ),
        400,
        Some("metadata.nmae"),
        "unknown field `nmae`",
    );
    let text = server
        .client
        .post(server.url("/v2/projects"))
        .body("name=x")
        .send()
        .unwrap();
    refused(text, 415, Some("Content-Type"), "application/json");
    // Multipart: missing parts, a non-kubeconfig, a bad manifest.
    let clusters = "/v2/cluster-providers/edge/clusters";
    refused(
        server.upload(clusters, doc("c9", json!({})), None),
        400,
        Some("file"),
        "`file` part",
    );
    let no_metadata = server
        .client
        .post(server.url(clusters))
        .multipart(
            multipart::Form::new().part("file", multipart::Part::bytes(fixture("kubeconfig.yaml"))),
        )
        .send()
        .unwrap();
    refused(no_metadata, 400, Some("metadata"), "`metadata` part");
    refused(
        server.upload(
            clusters,
            doc("c9", json!({})),
            Some(b"hello: world".to_vec()),
        ),
        400,
        Some("file"),
        "not a kubeconfig",
    );
    refused(
        server.post(clusters, doc("c9", json!({}))),
        415,
        Some("Content-Type"),
        "multipart/form-data",
    );
    let bad_manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nkind: Secret\nmetadata: {name: Bad_Name}\n".to_vec();
    refused(
        server.upload(
            &format!("{CA}/apps"),
            doc("bad", json!({})),
            Some(bad_manifest),
        ),
        400,
        Some("file[1]"),
        "apiVersion",
    );
    let bad_name = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n".to_vec();
    refused(
        server.upload(&format!("{CA}/apps"), doc("bad", json!({})), Some(bad_name)),
        400,
        Some("file[0]"),
        "RFC 1123",
    );
    // Controllers: not a component, a forbidden import, the wrong world, host and port.
    let controllers = "/v2/controllers";
    let placement = |name: &str| doc(name, json!({"type": "placement", "priority": 1}));
    refused(
        server.upload(controllers, placement("x"), Some(b"not wasm".to_vec())),
        422,
        Some("file"),
        "not a WebAssembly component",
    );
    refused(
        server.upload(
            controllers,
            placement("x"),
            Some(crate::support::importing(
                "wasi:http/outgoing-handler@0.2.0",
            )),
        ),
        422,
        Some("file"),
        "wasi:http/outgoing-handler",
    );
    refused(
        server.upload(controllers, placement("x"), Some(wasm("gac.wasm"))),
        422,
        Some("file"),
        "must export wasmco:controller/placement@0.2.0",
    );
    // Replacing a controller that does not exist is a 404, whatever the file.
    let form = reqwest::blocking::multipart::Form::new()
        .text("metadata", placement("ghost").to_string())
        .part(
            "file",
            reqwest::blocking::multipart::Part::bytes(b"not wasm".to_vec()).file_name("f"),
        );
    let missing = server
        .client
        .put(server.url("/v2/controllers/ghost"))
        .multipart(form)
        .send()
        .unwrap();
    refused(missing, 404, None, "not found");
    refused(
        server.upload(
            controllers,
            doc(
                "x",
                json!({"type": "action", "host": "10.0.0.1", "port": 9099}),
            ),
            Some(wasm("gac.wasm")),
        ),
        400,
        Some("spec.host"),
        "uploaded as .wasm",
    );
    refused(
        server.upload(
            controllers,
            doc("x", json!({"type": "sideways"})),
            Some(wasm("gac.wasm")),
        ),
        400,
        Some("spec.type"),
        "unknown variant",
    );
    refused(
        server.upload(
            controllers,
            doc(
                "x",
                json!({"type": "action", "limits": {"memoryBytes": 1u64 << 40}}),
            ),
            Some(wasm("gac.wasm")),
        ),
        422,
        Some("spec"),
        "limits.memoryBytes",
    );
    // Placement intents: cluster and label at once; an app that does not exist.
    let app_intents = format!("{DIG}/generic-placement-intents/gpi/app-intents");
    let both = json!({"app": "web", "intent": {"allOf": [{"clusterProvider": "edge", "cluster": "c1", "clusterLabel": "x"}]}});
    refused(
        server.post(&app_intents, doc("both", both)),
        400,
        Some("spec.intent.allOf[0]"),
        "both cluster and clusterLabel",
    );
    let ghost = json!({"app": "ghost", "intent": {"anyOf": [{"clusterProvider": "edge", "cluster": "c1"}]}});
    refused(
        server.post(&app_intents, doc("ghost", ghost)),
        422,
        Some("spec.app"),
        "app proj1/vfw/v1/ghost not found",
    );
    // As EMCO: the clusters an intent names exist when it is made.
    let nowhere = json!({"app": "web", "intent": {"anyOf": [{"clusterProvider": "edge", "cluster": "c1"}, {"clusterProvider": "edge", "cluster": "nowhere"}]}});
    refused(
        server.post(&app_intents, doc("nowhere", nowhere)),
        422,
        Some("spec.intent.anyOf[1].cluster"),
        "cluster edge/nowhere not found",
    );
    let no_provider = json!({"app": "web", "intent": {"allOf": [{"clusterProvider": "mars", "clusterLabel": "edge"}]}});
    refused(
        server.post(&app_intents, doc("mars", no_provider)),
        422,
        Some("spec.intent.allOf[0].clusterProvider"),
        "cluster provider mars not found",
    );
    // A parent that does not exist; a route that does not exist; a method that is not allowed.
    refused(
        server.post(
            "/v2/projects/nope/composite-apps",
            doc("a", json!({"compositeAppVersion": "v1"})),
        ),
        404,
        None,
        "project nope not found",
    );
    refused(
        server.get("/v2/nothing-here"),
        404,
        None,
        "no route for GET /v2/nothing-here",
    );
    let patch = server.client.patch(server.url(P)).send().unwrap();
    refused(patch, 405, None, "PATCH is not allowed");
    // Oversized bodies.
    // (Raw, so the client reads the answer instead of failing to write a
    // body the server already refused.)
    let answer = raw_request(
        &server,
        "POST /v2/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3000000\r\n\r\n{",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains(
            r#"{"message":"request body is larger than the 1 MiB this resource accepts"}"#
        ),
        "{answer}"
    );
    let answer = raw_request(
        &server,
        "POST /v2/controllers HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 70000000\r\n\r\n--b",
    );
    assert!(answer.contains("larger than the 64 MiB"), "{answer}");
    // Nothing refused above was stored.
    assert_eq!(
        expect(server.get("/v2/projects"), 200)
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        expect(server.get("/v2/controllers"), 200)
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn the_openapi_document_covers_every_route() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let document = expect(server.get("/v2/openapi.json"), 200);
    assert_eq!(document["openapi"], "3.0.3");
    let operations = wasmco_api::openapi::operations();
    assert!(operations.len() > 70);
    for (method, path) in &operations {
        assert!(
            document["paths"][path][method].is_object(),
            "{method} {path} undocumented"
        );
        // And it is routed: a request reaches a handler, not the fallback.
        if *method == "get" {
            let concrete = path.replace('{', "x").replace('}', "");
            let body = server.get(&concrete).text().unwrap();
            assert!(
                !body.contains("no route for"),
                "{path} is documented but not routed: {body}"
            );
        }
    }
}

#[test]
fn a_json_body_for_a_multipart_resource_says_how_to_upload_it() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    // EMCO's controller registration of a service wasmco does not ship.
    let emco = json!({"metadata": {"name": "hpa"}, "spec": {"host": "hpa-placement", "port": 9099, "type": "placement", "priority": 1}});
    let response = server.post("/v2/controllers", emco);
    refused(
        response,
        422,
        Some("metadata.name"),
        "WebAssembly component",
    );
    let response = server.post(
        "/v2/controllers",
        json!({"metadata": {"name": "x"}, "spec": {"type": "action"}}),
    );
    refused(response, 415, Some("Content-Type"), "multipart/form-data");
    let response = server.post("/v2/controllers", json!({}));
    refused(response, 415, Some("Content-Type"), "multipart/form-data");
}
