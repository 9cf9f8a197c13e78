//! Instantiate end to end through the REST API with the real plugins: the
//! computed context, controller priorities, a hostile controller, and the
//! DIG's state machine.

use serde_json::{Value, json};

use crate::support::server::{Server, doc, expect, fixture, refused, wasm};

const CA: &str = "/v2/projects/shop/composite-apps/store/v1";
pub const DIG: &str = "/v2/projects/shop/composite-apps/store/v1/deployment-intent-groups/live";

/// Three clusters, a composite app of two apps, one DIG using gac.
fn set_up(server: &Server) {
    let kubeconfig = fixture("kubeconfig.yaml");
    set_up_with(server, [kubeconfig.clone(), kubeconfig.clone(), kubeconfig]);
}

/// [`set_up`] with the clusters' kubeconfigs.
pub fn set_up_with(server: &Server, kubeconfigs: [Vec<u8>; 3]) {
    expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    let clusters = [
        ("c1", ["edge", "east"]),
        ("c2", ["edge", "west"]),
        ("c3", ["edge", "west"]),
    ];
    for ((cluster, labels), kubeconfig) in clusters.into_iter().zip(kubeconfigs) {
        server.register_labelled("edge", cluster, &kubeconfig, &labels);
    }
    server.upload_action("gac", 10, "gac.wasm");
    expect(server.post("/v2/projects", doc("shop", json!({}))), 201);
    expect(
        server.post(
            "/v2/projects/shop/composite-apps",
            doc("store", json!({"compositeAppVersion": "v1"})),
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
    let db = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db}\nspec: {replicas: 1}\n"
        .to_vec();
    expect(
        server.upload(&format!("{CA}/apps"), doc("db", json!({})), Some(db)),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/apps/web/dependency"),
            doc(
                "needs-db",
                json!({"app": "db", "opStatus": "Ready", "wait": 0}),
            ),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/composite-profiles"),
            doc("profile", json!({})),
        ),
        201,
    );
    expect(
        server.upload(
            &format!("{CA}/composite-profiles/profile/profiles"),
            doc("web-profile", json!({"app": "web"})),
            Some(b"Deployment/web: {spec: {replicas: 2}}\n".to_vec()),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{CA}/deployment-intent-groups"),
            doc("live", json!({"compositeProfile": "profile", "version": "r1", "overrideValues": [
                {"app": "db", "values": {"Deployment/db": {"metadata": {"labels": {"tier": "data"}}}}}]})),
        ),
        201,
    );
    add_placement(server, DIG);
    expect(
        server.post(
            &format!("{DIG}/controller-intents"),
            doc("c3-replicas", json!({"customizations": [{"app": "web", "target": {"kind": "Deployment", "name": "web"},
                "patchType": "merge", "patch": {"spec": {"replicas": 5}}, "clusterSpecific": true,
                "clusterInfo": {"scope": "name", "clusterProvider": "edge", "cluster": "c3"}}]})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "gac": "c3-replicas"}}),
            ),
        ),
        201,
    );
}

/// web on every edge cluster (allOf by label), db on one west cluster (anyOf).
pub fn add_placement(server: &Server, dig: &str) {
    expect(
        server.post(
            &format!("{dig}/generic-placement-intents"),
            doc("gpi", json!({})),
        ),
        201,
    );
    let app_intents = format!("{dig}/generic-placement-intents/gpi/app-intents");
    let web = json!({"app": "web", "intent": {"allOf": [{"clusterProvider": "edge", "clusterLabel": "edge"}]}});
    expect(server.post(&app_intents, doc("web", web)), 201);
    let db = json!({"app": "db", "intent": {"anyOf": [{"clusterProvider": "edge", "clusterLabel": "west"}]}});
    expect(server.post(&app_intents, doc("db", db)), 201);
}

pub fn action(server: &Server, dig: &str, action: &str) -> reqwest::blocking::Response {
    server
        .client
        .post(server.url(&format!("{dig}/{action}")))
        .send()
        .unwrap()
}

/// `{app: {cluster: [manifests]}}` of the current context.
fn placed(context: &Value) -> Vec<(String, String, Vec<Value>)> {
    let mut out = Vec::new();
    for app in context["apps"].as_array().unwrap() {
        for cluster in app["clusters"].as_array().unwrap() {
            out.push((
                app["name"].as_str().unwrap().to_owned(),
                cluster["cluster"].as_str().unwrap().to_owned(),
                cluster["resources"].as_array().unwrap().clone(),
            ));
        }
    }
    out
}

pub fn find<'a>(resources: &'a [Value], kind: &str, name: &str) -> &'a Value {
    resources
        .iter()
        .find(|r| r["kind"] == kind && r["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name} missing from {resources:?}"))
}

#[test]
fn instantiate_computes_exactly_the_expected_context() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    refused(
        action(&server, DIG, "instantiate"),
        409,
        None,
        "cannot instantiate deployment intent group shop/store/v1/live: it is Created, and only Approved, Terminated or TerminateStopped can become Instantiated",
    );
    let approved = expect(action(&server, DIG, "approve"), 202);
    assert_eq!(approved["deployedStatus"], "Approved");
    refused(action(&server, DIG, "approve"), 409, None, "it is Approved");
    let done = expect(action(&server, DIG, "instantiate"), 202);
    assert_eq!(done["deployedStatus"], "Instantiated");
    assert_eq!(done["revision"], 1);
    let states: Vec<&str> = done["states"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["Created", "Approved", "Instantiated"]);

    let context = expect(server.get(&format!("{DIG}/context")), 200);
    assert_eq!(context["appOrder"], json!(["db", "web"]));
    let clusters = placed(&context);
    let where_: Vec<(&str, &str)> = clusters
        .iter()
        .map(|(a, c, _)| (a.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        where_,
        [("db", "c2"), ("web", "c1"), ("web", "c2"), ("web", "c3")]
    );
    for (app, cluster, resources) in &clusters {
        match app.as_str() {
            "web" => {
                // The profile set 2 everywhere; gac set 5 on c3 only.
                let replicas = find(resources, "Deployment", "web")["spec"]["replicas"].clone();
                assert_eq!(
                    replicas,
                    if cluster == "c3" { json!(5) } else { json!(2) },
                    "{cluster}"
                );
                find(resources, "Service", "web");
                assert_eq!(resources.len(), 2);
            }
            _ => {
                let db = find(resources, "Deployment", "db");
                assert_eq!(db["metadata"]["labels"]["tier"], "data");
                assert_eq!(db["spec"]["replicas"], 1);
            }
        }
    }
    // Filters, and YAML.
    let only = expect(
        server.get(&format!("{DIG}/context?app=web&cluster=edge%2Bc3")),
        200,
    );
    assert_eq!(placed(&only).len(), 1);
    let yaml = server
        .client
        .get(server.url(&format!("{DIG}/context?app=db")))
        .header("accept", "application/yaml")
        .send()
        .unwrap();
    assert_eq!(yaml.headers()["content-type"], "application/yaml");
    let text = yaml.text().unwrap();
    assert!(text.contains("tier: data"), "{text}");
    // EMCO's status query: its type, and filters repeated or comma-separated.
    let status = expect(
        server.get(&format!(
            "{DIG}/status?type=cluster&apps=web&apps=db&clusters=edge%2Bc1,edge%2Bc2&resources=web"
        )),
        200,
    );
    let shown: Vec<(&str, &str, usize)> = status["apps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|app| {
            app["clusters"].as_array().unwrap().iter().map(move |c| {
                let resources = c["resources"].as_array().unwrap().len();
                (
                    app["name"].as_str().unwrap(),
                    c["cluster"].as_str().unwrap(),
                    resources,
                )
            })
        })
        .collect();
    assert_eq!(
        shown,
        [("db", "c2", 0), ("web", "c1", 2), ("web", "c2", 2)],
        "{status}"
    );
    refused(
        server.get(&format!("{DIG}/status?type=monitor")),
        400,
        None,
        "rsync or cluster",
    );
    refused(
        server.get(&format!("{DIG}/status?bogus=1")),
        400,
        None,
        "unknown parameter",
    );
    // Deployed DIGs are not deleted underneath.
    refused(
        server.delete(DIG),
        409,
        None,
        "terminate it before deleting it",
    );
}

#[test]
fn the_later_action_controller_wins_and_update_rollback_terminate_follow_the_states() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);
    // A second gac, registered later but with a larger priority number: it runs
    // after the first and its value wins on every cluster, c3 included.
    expect(
        server.upload(
            "/v2/controllers",
            doc("gac-late", json!({"type": "action", "priority": 20})),
            Some(wasm("gac.wasm")),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{DIG}/controller-intents"),
            doc("nine", json!({"customizations": [{"app": "web", "target": {"kind": "Deployment", "name": "web"},
                "patchType": "merge", "patch": {"spec": {"replicas": 9}}}]})),
        ),
        201,
    );
    expect(
        server.put(
            &format!("{DIG}/intents/intents"),
            doc("intents", json!({"intent": {"genericPlacementIntent": "gpi", "gac-late": "nine", "gac": "c3-replicas"}})),
        ),
        200,
    );
    let updated = expect(action(&server, DIG, "update"), 202);
    assert_eq!(
        (
            updated["deployedStatus"].as_str(),
            updated["revision"].as_u64()
        ),
        (Some("Updated"), Some(2))
    );
    let replicas = |context: &Value| -> Vec<Value> {
        placed(context)
            .iter()
            .filter(|(app, _, _)| app == "web")
            .map(|(_, _, r)| find(r, "Deployment", "web")["spec"]["replicas"].clone())
            .collect()
    };
    assert_eq!(
        replicas(&expect(server.get(&format!("{DIG}/context")), 200)),
        [json!(9), json!(9), json!(9)]
    );
    // Revision 1 is kept; rollback makes it current again.
    let back = server
        .client
        .post(server.url(&format!("{DIG}/rollback")))
        .json(&json!({"revision": 1}))
        .send()
        .unwrap();
    assert_eq!(expect(back, 202)["revision"], 1);
    assert_eq!(
        replicas(&expect(server.get(&format!("{DIG}/context")), 200)),
        [json!(2), json!(2), json!(5)]
    );
    let missing = server
        .client
        .post(server.url(&format!("{DIG}/rollback")))
        .json(&json!({"revision": 7}))
        .send()
        .unwrap();
    refused(missing, 422, Some("revision"), "revision 7 is not kept");
    // EMCO's body: the revision a string under spec.
    let rollback = |body: Value| {
        server
            .client
            .post(server.url(&format!("{DIG}/rollback")))
            .json(&body)
            .send()
            .unwrap()
    };
    let emco = json!({"metadata": {"name": "rollback-1", "description": "back"}, "spec": {"revision": "1"}});
    assert_eq!(expect(rollback(emco), 202)["revision"], 1);
    refused(
        rollback(json!({"metadata": {"name": "r"}, "spec": {"revision": "one"}})),
        400,
        Some("spec.revision"),
        "must be a revision number",
    );
    refused(
        rollback(json!({"spec": {}})),
        400,
        Some("spec.revision"),
        "missing",
    );
    // Terminate, and what a terminated DIG refuses.
    assert_eq!(
        expect(action(&server, DIG, "terminate"), 202)["deployedStatus"],
        "Terminated"
    );
    refused(
        action(&server, DIG, "terminate"),
        409,
        None,
        "cannot terminate",
    );
    refused(
        action(&server, DIG, "update"),
        409,
        None,
        "cannot update deployment intent group shop/store/v1/live: it is Terminated, and only Instantiated or Updated can become Updated",
    );
    // It can be instantiated again; the revision keeps counting.
    assert_eq!(
        expect(action(&server, DIG, "instantiate"), 202)["revision"],
        3
    );
    refused(
        action(
            &server,
            "/v2/projects/shop/composite-apps/store/v1/deployment-intent-groups/ghost",
            "approve",
        ),
        404,
        None,
        "not found",
    );
}

#[test]
fn a_hostile_controller_fails_instantiate_and_leaves_nothing_behind() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    expect(
        server.upload(
            "/v2/controllers",
            doc(
                "hostile",
                json!({"type": "placement", "priority": 5, "limits": {"deadlineMs": 200}}),
            ),
            Some(wasm("guest_hostile.wasm")),
        ),
        201,
    );
    let dig2 = format!("{CA}/deployment-intent-groups/doomed");
    expect(
        server.post(
            &format!("{CA}/deployment-intent-groups"),
            doc(
                "doomed",
                json!({"compositeProfile": "profile", "version": "r1"}),
            ),
        ),
        201,
    );
    add_placement(&server, &dig2);
    expect(
        server.post(
            &format!("{dig2}/controller-intents"),
            doc("spin", json!({"do": "loop"})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{dig2}/intents"),
            doc(
                "intents",
                json!({"intent": {"genericPlacementIntent": "gpi", "hostile": "spin"}}),
            ),
        ),
        201,
    );
    expect(action(&server, &dig2, "approve"), 202);
    refused(
        action(&server, &dig2, "instantiate"),
        422,
        None,
        "controller hostile: did not finish within its deadline of 200 ms",
    );
    refused(
        server.get(&format!("{dig2}/context")),
        422,
        None,
        "has no context yet (it is Approved)",
    );
    // Nothing half-built in the store: only the state of the approve.
    drop(server);
    let (options, _etcd) = crate::support::server::stored_state(data.path());
    let state = wasmco::startup::open_state(data.path(), None, options).unwrap();
    let keys: Vec<String> = state
        .db
        .store()
        .scan_prefix(b"ctx/shop/store/v1/doomed/")
        .unwrap()
        .into_iter()
        .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
        .collect();
    assert_eq!(keys, ["ctx/shop/store/v1/doomed/state"]);
}

#[test]
fn bad_inputs_fail_instantiate_with_the_reason() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    set_up(&server);
    expect(action(&server, DIG, "approve"), 202);
    // An override naming a resource the app does not have.
    expect(
        server.put(
            DIG,
            doc(
                "live",
                json!({"compositeProfile": "profile", "version": "r1", "overrideValues": [
                {"app": "db", "values": {"Service/db": {"spec": {}}}}]}),
            ),
        ),
        200,
    );
    refused(
        action(&server, DIG, "instantiate"),
        422,
        None,
        "app db: override names Service/db, which the app does not have",
    );
    // Helm-style values are not ours: the key must be Kind/name.
    expect(
        server.put(
            DIG,
            doc(
                "live",
                json!({"compositeProfile": "profile", "version": "r1", "overrideValues": [
                {"app": "db", "values": {"replicas": 3}}]}),
            ),
        ),
        200,
    );
    refused(
        action(&server, DIG, "instantiate"),
        422,
        None,
        "override key \"replicas\" must be Kind/name",
    );
    // The logical cloud a DIG names must exist (as EMCO: at create) and
    // be instantiated (at instantiate).
    let with_cloud = json!({"compositeProfile": "profile", "version": "r1", "logicalCloud": "ops"});
    refused(
        server.put(DIG, doc("live", with_cloud.clone())),
        422,
        Some("spec.logicalCloud"),
        "logical cloud shop/ops not found",
    );
    expect(
        server.post(
            "/v2/projects/shop/logical-clouds",
            doc("ops", json!({"level": "0"})),
        ),
        201,
    );
    expect(server.put(DIG, doc("live", with_cloud)), 200);
    refused(
        action(&server, DIG, "instantiate"),
        422,
        None,
        "which is Created; instantiate it first",
    );
    // Apps that wait for each other cannot be ordered.
    expect(
        server.put(
            DIG,
            doc(
                "live",
                json!({"compositeProfile": "profile", "version": "r1"}),
            ),
        ),
        200,
    );
    // As in EMCO's files, the DIG's intents may come before the intents
    // they name: refused only at instantiate, naming what is missing.
    let intents = format!("{DIG}/intents/intents");
    for (missing, what) in [
        (
            json!({"genericPlacementIntent": "later", "gac": "c3-replicas"}),
            "generic placement intent later",
        ),
        (
            json!({"genericPlacementIntent": "gpi", "gac": "later"}),
            "later, which it does not have",
        ),
    ] {
        expect(
            server.put(&intents, doc("intents", json!({"intent": missing}))),
            200,
        );
        refused(action(&server, DIG, "instantiate"), 422, None, what);
    }
    let restored = json!({"intent": {"genericPlacementIntent": "gpi", "gac": "c3-replicas"}});
    expect(server.put(&intents, doc("intents", restored)), 200);
    expect(
        server.post(
            &format!("{CA}/apps/db/dependency"),
            doc("needs-web", json!({"app": "web"})),
        ),
        201,
    );
    refused(
        action(&server, DIG, "instantiate"),
        422,
        None,
        "app dependencies form a cycle among db, web",
    );
    // Each failure left the DIG approved and without a context.
    let state = server.get(&format!("{DIG}/context"));
    refused(state, 422, None, "has no context yet (it is Approved)");
}
