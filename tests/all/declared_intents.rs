//! Intent kinds that controllers declare: EMCO's JSON registration binds
//! the built-in gac, its kinds get CRUD, schema checks and OpenAPI paths,
//! and the DIG's intents of those kinds reach gac at instantiate.

use reqwest::blocking::multipart;
use serde_json::{Value, json};

use crate::deploy::{DIG, action, find, set_up_with};
use crate::support::server::{Server, doc, expect, fixture, refused, wasm};

/// Posts `metadata`+`spec` with `files` as multipart parts named `part`.
fn upload_parts(
    server: &Server,
    path: &str,
    body: Value,
    part: &str,
    files: &[(&str, &[u8])],
) -> reqwest::blocking::Response {
    let mut form = multipart::Form::new().text("metadata", body.to_string());
    for (name, bytes) in files {
        form = form.part(
            part.to_owned(),
            multipart::Part::bytes(bytes.to_vec()).file_name(name.to_string()),
        );
    }
    server
        .client
        .post(server.url(path))
        .multipart(form)
        .send()
        .unwrap()
}

#[test]
fn emcos_gac_kinds_are_served_checked_documented_and_handed_to_gac() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let kubeconfig = fixture("kubeconfig.yaml");
    set_up_with(
        &server,
        [kubeconfig.clone(), kubeconfig.clone(), kubeconfig],
    );

    // As EMCO's files register gac: by host and port. The built-in
    // component takes its place, with a note and the kinds it declares.
    let registered = expect(
        server.put(
            "/v2/controllers/gac",
            json!({"metadata": {"name": "gac"},
                   "spec": {"host": "192.168.1.1", "port": 9033, "type": "action", "priority": 1}}),
        ),
        200,
    );
    assert!(
        registered["status"]["note"]
            .as_str()
            .unwrap()
            .contains("built-in"),
        "{registered}"
    );
    let segments: Vec<&str> = registered["status"]["intents"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["segment"].as_str().unwrap())
        .collect();
    assert_eq!(
        segments,
        ["generic-k8s-intents", "resources", "customizations"]
    );
    refused(
        server.post(
            "/v2/controllers",
            json!({"metadata": {"name": "sdewan"}, "spec": {"host": "h", "port": 1, "type": "action"}}),
        ),
        422,
        Some("metadata.name"),
        "ships no component",
    );

    // EMCO's test-gac shapes: a new ConfigMap from a file, and a json
    // patch of the web Deployment on c1 only.
    let gi = format!("{DIG}/generic-k8s-intents");
    expect(server.post(&gi, json!({"metadata": {"name": "gi"}})), 201);
    let resources = format!("{gi}/gi/resources");
    let config_map = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n";
    expect(
        upload_parts(
            &server,
            &resources,
            doc(
                "extra",
                json!({"app": "web", "newObject": "true",
                "resourceGVK": {"apiVersion": "v1", "kind": "ConfigMap", "name": "extra"}}),
            ),
            "file",
            &[("extra.yaml", config_map)],
        ),
        201,
    );
    expect(
        upload_parts(
            &server,
            &resources,
            doc(
                "web-deployment",
                json!({"app": "web", "newObject": "false",
                "resourceGVK": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}),
            ),
            "file",
            &[],
        ),
        201,
    );
    expect(
        upload_parts(
            &server,
            &format!("{resources}/web-deployment/customizations"),
            doc(
                "c1-replicas",
                json!({"clusterSpecific": "true",
                "clusterInfo": {"scope": "name", "clusterProvider": "edge", "cluster": "c1", "mode": "allow"},
                "patchType": "json", "patchJson": [{"op": "replace", "path": "/spec/replicas", "value": 7}]}),
            ),
            "files",
            &[],
        ),
        201,
    );
    // Read back, listed, and refused as the schema says.
    let listed = expect(server.get(&resources), 200);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(
        expect(server.get(&format!("{resources}/extra")), 200)["spec"]["app"],
        "web"
    );
    refused(
        upload_parts(
            &server,
            &resources,
            doc(
                "broken",
                json!({"newObject": "true",
                "resourceGVK": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}),
            ),
            "file",
            &[("x.yaml", b"{}")],
        ),
        400,
        Some("spec"),
        "app",
    );
    refused(
        server.post(&format!("{gi}/nobody/resources"), doc("x", json!({}))),
        415,
        Some("Content-Type"),
        "multipart",
    );
    refused(
        server.get(&format!("{DIG}/no-such-kind")),
        404,
        None,
        "no route",
    );
    refused(server.delete(&format!("{gi}/gi")), 409, None, "resources");
    // The OpenAPI document has the kinds' paths.
    let openapi = expect(server.get("/v2/openapi.json"), 200);
    let customization = "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/{deploymentIntentGroup}/generic-k8s-intents/{genericK8sIntent}/resources/{genericResource}/customizations";
    assert!(
        openapi["paths"][customization]["post"].is_object(),
        "{}",
        openapi["paths"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );

    // The DIG names gac's intent as EMCO's do; gac gets the tree.
    expect(
        server.put(
            &format!("{DIG}/intents/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "gac": "gi"}}),
            ),
        ),
        200,
    );
    expect(action(&server, DIG, "approve"), 202);
    let done = expect(action(&server, DIG, "instantiate"), 202);
    assert_eq!(done["deployedStatus"], "Instantiated", "{done}");
    let context = expect(server.get(&format!("{DIG}/context?app=web")), 200);
    for cluster in context["apps"][0]["clusters"].as_array().unwrap() {
        let name = cluster["cluster"].as_str().unwrap();
        let resources = cluster["resources"].as_array().unwrap();
        assert_eq!(find(resources, "ConfigMap", "extra")["data"]["k"], "v");
        let replicas = &find(resources, "Deployment", "web")["spec"]["replicas"];
        assert_eq!(
            *replicas,
            if name == "c1" { json!(7) } else { json!(2) },
            "{name}"
        );
    }
    expect(action(&server, DIG, "terminate"), 202);

    // An intent naming an app the composite app lacks is a 422 at
    // instantiate, as EMCO refuses it, and nothing is deployed.
    expect(
        upload_parts(
            &server,
            &resources,
            doc(
                "ghost",
                json!({"app": "ghost", "newObject": "true",
                "resourceGVK": {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost"}}),
            ),
            "file",
            &[(
                "ghost.yaml",
                b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ghost}\n",
            )],
        ),
        201,
    );
    refused(
        action(&server, DIG, "instantiate"),
        422,
        None,
        "names app ghost, which does not exist",
    );
}

/// `wasm` with a `wasmco:intents` section holding `declaration`, as a
/// third party's toolchain may add one to its component.
fn with_intents(wasm: &[u8], declaration: &Value) -> Vec<u8> {
    fn leb128(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"wasmco:intents";
    let data = declaration.to_string().into_bytes();
    let mut payload = Vec::new();
    leb128(name.len(), &mut payload);
    payload.extend_from_slice(name);
    payload.extend_from_slice(&data);
    let mut out = wasm.to_vec();
    out.push(0);
    leb128(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}

#[test]
fn an_uploaded_controller_gets_its_declared_kinds_and_no_one_takes_anothers() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    // A third party's placement controller declaring a kind of its own.
    let declaration = json!({"kinds": [{"name": "zone intent", "segment": "zone-intents",
        "param": "zoneIntent", "schema": {"type": "object", "required": ["zone"],
        "properties": {"zone": {"type": "string", "enum": ["north", "south"]}}},
        "references": [{"field": "/spec/app", "to": "app"}]}]});
    let zones = with_intents(&wasm("generic_placement.wasm"), &declaration);
    expect(
        server.upload(
            "/v2/controllers",
            doc("zones", json!({"type": "placement", "priority": 5})),
            Some(zones),
        ),
        201,
    );
    crate::support::server::project_with_app(&server);
    let dig = "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/d";
    expect(
        server.post(
            "/v2/projects/p/composite-apps/ca/v1/composite-profiles",
            doc("cp", json!({})),
        ),
        201,
    );
    expect(
        server.post(
            "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups",
            doc("d", json!({"compositeProfile": "cp", "version": "r1"})),
        ),
        201,
    );
    let collection = format!("{dig}/zone-intents");
    expect(
        server.post(&collection, doc("north", json!({"zone": "north"}))),
        201,
    );
    refused(
        server.post(&collection, doc("east", json!({"zone": "east"}))),
        400,
        Some("spec.zone"),
        "east",
    );
    expect(
        server.post(&collection, doc("north", json!({"zone": "north"}))),
        409,
    );
    assert_eq!(
        expect(server.get(&collection), 200)
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let openapi = expect(server.get("/v2/openapi.json"), 200);
    let item = "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/{deploymentIntentGroup}/zone-intents/{zoneIntent}";
    assert!(openapi["paths"][item]["put"].is_object());
    // The same kinds from the same component under another name are the
    // same documents; other kinds at a taken segment are refused.
    let other =
        json!({"kinds": [{"name": "zone intent", "segment": "zone-intents", "param": "z"}]});
    refused(
        server.upload(
            "/v2/controllers",
            doc("copy", json!({"type": "placement"})),
            Some(with_intents(&wasm("generic_placement.wasm"), &other)),
        ),
        422,
        Some("wasmco:intents.kinds[0].segment"),
        "already served by controller zones",
    );
    refused(server.get("/v2/controllers/copy"), 404, None, "");
    // A declaration that is not one is refused naming the section.
    refused(
        server.upload(
            "/v2/controllers",
            doc("broken", json!({"type": "placement"})),
            Some(with_intents(
                &wasm("generic_placement.wasm"),
                &json!({"kinds": [{"segment": "status"}]}),
            )),
        ),
        422,
        Some("wasmco:intents"),
        "",
    );
    // The controller cannot go while its intents are stored (nothing
    // could reach them then); once they are deleted, it can, and its
    // kinds go with it.
    refused(
        server.delete("/v2/controllers/zones"),
        409,
        None,
        "zone-intents/north",
    );
    expect(server.delete(&format!("{collection}/north")), 204);
    expect(server.delete("/v2/controllers/zones"), 204);
    refused(server.get(&collection), 404, None, "no route");
}

#[test]
fn of_two_controllers_uploaded_at_once_with_other_kinds_at_one_segment_one_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let placement = wasm("generic_placement.wasm");
    for round in 0..6 {
        let segment = format!("race{round}-intents");
        let declaring = |param: &str| {
            let declaration = json!({"kinds": [{"name": "race intent", "segment": segment,
                                                "param": param}]});
            with_intents(&placement, &declaration)
        };
        let (first, second) = (declaring("a"), declaring("b"));
        let statuses: Vec<u16> = std::thread::scope(|threads| {
            let uploads: Vec<_> = [("a", first), ("b", second)]
                .into_iter()
                .map(|(name, component)| {
                    let server = &server;
                    threads.spawn(move || {
                        server
                            .upload(
                                "/v2/controllers",
                                doc(
                                    &format!("racer-{name}{round}"),
                                    json!({"type": "placement"}),
                                ),
                                Some(component),
                            )
                            .status()
                            .as_u16()
                    })
                })
                .collect();
            uploads.into_iter().map(|u| u.join().unwrap()).collect()
        });
        let mut sorted = statuses.clone();
        sorted.sort();
        assert_eq!(sorted, [201, 422], "round {round}: {statuses:?}");
    }
}
