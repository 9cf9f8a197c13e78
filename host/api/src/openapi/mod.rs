//! The OpenAPI 3 document, generated from the same kind table that builds
//! the router, so a route cannot exist undocumented.

use serde_json::{Value, json};

use wasmco_core::{BodyShape, FileKind, Kind};

mod specs;
mod wire;

use wasmco_core::wire::{ContextBody, DeploymentState, DeploymentStatus, ErrorBody};

/// Every (method, path) the API serves, in OpenAPI path syntax.
pub fn operations() -> Vec<(&'static str, String)> {
    let mut ops = vec![
        ("get", "/healthz".to_owned()),
        ("get", "/v2/openapi.json".to_owned()),
        ("get", "/v2/hosts".to_owned()),
        ("get", "/v2/overview".to_owned()),
        ("get", "/v2/tokens".to_owned()),
        ("post", "/v2/tokens".to_owned()),
        ("get", "/v2/tokens/{token}".to_owned()),
        ("delete", "/v2/tokens/{token}".to_owned()),
    ];
    for kind in Kind::ALL.into_iter().filter(|k| !k.is_declared()) {
        ops.push(("get", kind.collection_route()));
        ops.push(("post", kind.collection_route()));
        ops.push(("get", kind.item_route()));
        ops.push(("put", kind.item_route()));
        ops.push(("delete", kind.item_route()));
    }
    let dig = Kind::DeploymentIntentGroup.item_route();
    for action in super::deployments::DigAction::ALL {
        ops.push(("post", format!("{dig}/{}", action.route())));
    }
    ops.push(("get", format!("{dig}/context")));
    ops.push(("get", format!("{dig}/status")));
    let lc = Kind::LogicalCloud.item_route();
    for action in super::logical_clouds::CloudAction::ALL {
        ops.push(("post", format!("{lc}/{}", action.route())));
    }
    ops.push(("get", format!("{lc}/status")));
    for cert in [Kind::CaCert, Kind::ProjectCaCert] {
        for stage in super::ca_certs::STAGES {
            let stage_route = format!("{}/{}", cert.item_route(), stage.route());
            for action in super::ca_certs::CertAction::ALL {
                ops.push(("post", format!("{stage_route}/{}", action.route())));
            }
            ops.push(("get", format!("{stage_route}/status")));
        }
    }
    ops.push((
        "get",
        format!(
            "{}/kubeconfig",
            Kind::LogicalCloudClusterReference.item_route()
        ),
    ));
    let cluster = Kind::Cluster.item_route();
    for (method, route) in super::pki::ROUTES {
        ops.push((method, format!("{cluster}/{route}")));
    }
    ops.push((
        "get",
        format!("{cluster}/{}", super::clusters::STATUS_ROUTE),
    ));
    for action in super::clusters::NetworkAction::ALL {
        ops.push(("post", format!("{cluster}/{}", action.route())));
    }
    ops
}

fn parameters(route: &str) -> Vec<Value> {
    route
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect()
}

/// A resource document of `kind`: metadata and the kind's spec (and the
/// `status` a GET answers, which a PUT may send back and is ignored).
fn resource_document(kind: Kind) -> Value {
    let required = if specs::spec_required(kind) {
        json!(["metadata", "spec"])
    } else {
        json!(["metadata"])
    };
    json!({"type": "object", "additionalProperties": false, "required": required,
           "properties": {"metadata": {"$ref": "#/components/schemas/Metadata"},
                          "spec": specs::spec(kind), "status": {}}})
}

fn request_body(kind: Kind) -> Value {
    let document = resource_document(kind);
    match kind.info().body {
        BodyShape::Document => {
            json!({"required": true, "content": {"application/json": {"schema": document}}})
        }
        BodyShape::Label => {
            json!({"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ClusterLabel"}}}})
        }
        BodyShape::Multipart(file) => {
            let description = match file {
                FileKind::Kubeconfig => "the cluster's kubeconfig (YAML)",
                FileKind::Component => "the controller's WebAssembly component (.wasm)",
                FileKind::Manifests => {
                    "Kubernetes manifests: multi-document YAML or a .tgz of YAML files"
                }
                FileKind::Profile => "the profile's overrides (YAML)",
            };
            json!({"required": true, "content": {"multipart/form-data": {
            "schema": {
                "type": "object",
                "additionalProperties": false,
                "required": ["metadata", "file"],
                "properties": {
                    "metadata": merge(&document, "the document (metadata and spec), as JSON"),
                    "file": {"type": "string", "format": "binary", "description": description}
                }},
            "encoding": {"metadata": {"contentType": "application/json"}}}}})
        }
    }
}

fn error_responses() -> Value {
    let error =
        json!({"content": {"application/json": {"schema": wire::reference::<ErrorBody>()}}});
    json!({
        "400": merge(&error, "invalid request; `field` names the part at fault"),
        "404": merge(&error, "the resource or its parent does not exist"),
        "409": merge(&error, "duplicate name, still referred to, or deployed (a logical cloud's level, namespace and user stay until it is terminated)"),
        "413": merge(&error, "request body too large"),
        "415": merge(&error, "wrong content type"),
        "422": merge(&error, "the body names something that does not exist, or its file is refused"),
    })
}

fn merge(base: &Value, description: &str) -> Value {
    let mut value = base.clone();
    value["description"] = json!(description);
    value
}

/// The document served at `/v2/openapi.json`, with the intent kinds the
/// stored controllers declare.
pub fn document_with(catalog: &wasmco_orchestrator::intents::Catalog) -> Value {
    let mut document = document();
    if let Some(paths) = document["paths"].as_object_mut() {
        document_declared(paths, catalog);
        document_what_every_operation_may_answer(paths);
    }
    document
}

/// Every declared intent kind's collection and item, as the kind table's.
fn document_declared(
    paths: &mut serde_json::Map<String, Value>,
    catalog: &wasmco_orchestrator::intents::Catalog,
) {
    use wasmco_core::intents::IntentBody;
    let dig = Kind::DeploymentIntentGroup.item_route();
    for declared in catalog.all() {
        let declaration = &declared.declaration;
        for kind in &declaration.kinds {
            let mut chain = vec![kind];
            let mut at = kind.parent.as_deref();
            while let Some(found) = at.and_then(|parent| declaration.kind(parent)) {
                chain.push(found);
                at = found.parent.as_deref();
            }
            chain.reverse();
            let mut collection = dig.clone();
            for (i, step) in chain.iter().enumerate() {
                collection.push('/');
                collection.push_str(&step.segment);
                if i + 1 < chain.len() {
                    collection.push_str(&format!("/{{{}}}", step.param));
                }
            }
            let item = format!("{collection}/{{{}}}", kind.param);
            let document = json!({
                "type": "object", "required": ["metadata"],
                "properties": {"metadata": {"$ref": "#/components/schemas/Metadata"}, "spec": kind.schema},
            });
            let file_part = if kind.body == IntentBody::File {
                "file"
            } else {
                "files"
            };
            let request = match kind.body {
                IntentBody::Json => json!({"required": true,
                    "content": {"application/json": {"schema": document}}}),
                IntentBody::File | IntentBody::Files => json!({"required": true,
                    "content": {"multipart/form-data": {"schema": {"type": "object", "required": ["metadata"],
                        "properties": {"metadata": document,
                                       file_part: {"type": "string", "format": "binary"}}}}}}),
            };
            let owner = format!("(declared by controller {})", declared.controller);
            let title = &kind.name;
            let errors = error_responses();
            let mut created = errors.clone();
            created["201"] = json!({"description": "created; the stored body"});
            let mut updated = errors.clone();
            updated["200"] = json!({"description": "updated; the stored body"});
            paths.insert(collection.clone(), json!({
                "get": {"summary": format!("list {title}s {owner}"), "parameters": parameters(&collection),
                        "responses": {"200": {"description": "OK"}, "404": errors["404"]}},
                "post": {"summary": format!("create a {title} {owner}"), "parameters": parameters(&collection),
                         "requestBody": request, "responses": created},
            }));
            paths.insert(item.clone(), json!({
                "get": {"summary": format!("get a {title}"), "parameters": parameters(&item),
                        "responses": {"200": {"description": "OK"}, "404": errors["404"]}},
                "put": {"summary": format!("update a {title}"), "parameters": parameters(&item),
                        "requestBody": request, "responses": updated},
                "delete": {"summary": format!("delete a {title}"), "parameters": parameters(&item),
                           "responses": {"204": {"description": "deleted"}, "404": errors["404"],
                                         "409": errors["409"]}},
            }));
        }
    }
}

/// The document served at `/v2/openapi.json`, without declared kinds.
pub fn document() -> Value {
    let mut paths = serde_json::Map::new();
    for kind in Kind::ALL.into_iter().filter(|k| !k.is_declared()) {
        let title = kind.info().title;
        let ok = json!({"description": "OK", "content": {"application/json": {"schema": {}}}});
        let collection = kind.collection_route();
        let mut list = json!({"summary": format!("list {title}s"), "parameters": parameters(&collection),
            "responses": {"200": ok, "404": error_responses()["404"]}});
        if kind == Kind::Cluster
            && let Some(params) = list["parameters"].as_array_mut()
        {
            params.push(json!({"name": "label", "in": "query", "required": false, "schema": {"type": "string"},
                "description": "answer, as EMCO does, the names of the clusters carrying this label"}));
        }
        if kind == Kind::AppProfile
            && let Some(params) = list["parameters"].as_array_mut()
        {
            params.push(json!({"name": "app", "in": "query", "required": false, "schema": {"type": "string"},
                "description": "answer, as EMCO does, the one profile of this app"}));
        }
        let mut created = error_responses();
        created["201"] = json!({"description": "created; the stored body"});
        paths.insert(collection.clone(), json!({
            "get": list,
            "post": {"summary": format!("create a {title}"), "parameters": parameters(&collection),
                     "requestBody": request_body(kind), "responses": created},
        }));
        let item = kind.item_route();
        let mut updated = error_responses();
        updated["200"] = json!({"description": "updated; the stored body"});
        let mut item_params = parameters(&item);
        if kind.is_kv_pairs() {
            item_params.push(json!({"name": "key", "in": "query", "required": false, "schema": {"type": "string"},
                "description": "answer, as EMCO does, `{\"value\": …}` of this key"}));
        }
        paths.insert(item.clone(), json!({
            "get": {"summary": format!("get a {title}"), "parameters": item_params,
                    "responses": {"200": ok, "400": error_responses()["400"], "404": error_responses()["404"]}},
            "put": {"summary": format!("update a {title}"), "parameters": parameters(&item),
                    "requestBody": request_body(kind), "responses": updated},
            "delete": {"summary": format!("delete a {title}"), "parameters": parameters(&item),
                       "responses": {"204": {"description": "deleted"}, "404": error_responses()["404"],
                                     "409": error_responses()["409"]}},
        }));
    }
    document_deployments(&mut paths);
    document_pki(&mut paths);
    document_logical_clouds(&mut paths);
    document_ca_certs(&mut paths);
    paths.insert(
        "/healthz".into(),
        json!({"get": {"summary": "liveness", "responses": {"200": {"description": "alive"}}}}),
    );
    paths.insert("/v2/openapi.json".into(), json!({"get": {"summary": "this document", "responses": {"200": {"description": "OpenAPI 3"}}}}));
    document_hosts_and_tokens(&mut paths);
    document_what_every_operation_may_answer(&mut paths);
    let mut document = json!({
        "openapi": "3.0.3",
        "security": [{"bearer": []}],
        "info": {"title": "wasmco", "version": env!("CARGO_PKG_VERSION"),
                 "description": "EMCO-shaped API of wasmco, the multi-cluster orchestrator with WebAssembly controllers"},
        "paths": paths,
        "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
            "description": "the admin token (DATA_DIR/admin.token) or a scoped token from POST /v2/tokens"}},
        "schemas": {
            "Metadata": {"type": "object", "additionalProperties": false, "required": ["name"], "properties": {
                "name": {"type": "string", "pattern": specs::NAME_PATTERN},
                "description": {"type": "string"}, "userData1": {"type": "string"}, "userData2": {"type": "string"}}},
            "ClusterLabel": {"type": "object", "additionalProperties": false, "required": ["clusterLabel"],
                             "properties": {"clusterLabel": {"type": "string", "pattern": specs::NAME_PATTERN}}}
        }}
    });
    if let Some(schemas) = document["components"]["schemas"].as_object_mut() {
        schemas.extend(wire::components());
    }
    document
}

/// What any operation may answer besides its own: 400 (a query it does
/// not take, a body it cannot read), 401 without a valid token, 403 for a
/// scoped token past its role, 503 while the store is away. `/healthz`
/// needs no token and reads no store.
fn document_what_every_operation_may_answer(paths: &mut serde_json::Map<String, Value>) {
    let errors = error_responses();
    let generic = [
        ("400", errors["400"].clone()),
        (
            "401",
            merge(&errors["400"], "no token, or one that is not valid"),
        ),
        (
            "403",
            merge(
                &errors["400"],
                "the token is scoped to projects, and this needs more",
            ),
        ),
        (
            "503",
            merge(
                &errors["400"],
                "the store (etcd) cannot be reached, or the host is busy; try again",
            ),
        ),
    ];
    for (route, operations) in paths.iter_mut() {
        if route == "/healthz" {
            operations["get"]["security"] = json!([]);
            continue;
        }
        let Some(operations) = operations.as_object_mut() else {
            continue;
        };
        for operation in operations.values_mut() {
            let responses = &mut operation["responses"];
            for (code, response) in &generic {
                if responses.get(*code).is_none() {
                    responses[*code] = response.clone();
                }
            }
        }
    }
}

/// The hosts sharing the store, and the scoped tokens (admin only).
fn document_hosts_and_tokens(paths: &mut serde_json::Map<String, Value>) {
    let errors = error_responses();
    let unavailable = merge(
        &errors["404"],
        "the store (etcd) cannot be reached; try again",
    );
    paths.insert(
        "/v2/hosts".into(),
        json!({"get": {"summary": "the live hosts on this store, each with the targets (DIGs, logical clouds, cluster network sets) it reconciles; `self` marks the one answering",
                       "responses": {"200": {"description": "[{id, address, started, self, targets}]"},
                                     "503": unavailable}}}),
    );
    paths.insert(
        "/v2/overview".into(),
        json!({"get": {"summary": "what the status page at /ui shows (admin only): every DIG with its state, revision, actions and per app × cluster cell (deployed, ready, resource counts, connectivity); every cluster with its labels, reachability, server version and the deployed DIGs on it; every controller with its type, priority, limits and its calls since the host started (counts, the last 20 with duration and outcome)",
                       "responses": {"200": {"description": "{digs, clusters, controllers}"},
                                     "503": unavailable.clone()}}}),
    );
    let token = "/v2/tokens/{token}";
    paths.insert(
        "/v2/tokens".into(),
        json!({
            "get": {"summary": "the scoped tokens (never their secrets)", "responses": {"200": {"description": "the tokens"}}},
            "post": {"summary": "issue a scoped token: `{\"metadata\": {\"name\"}, \"spec\": {\"projects\", \"role\": viewer|editor, \"expires\"}}`; its secret is in `status.token`, once",
                     "requestBody": {"required": true, "content": {"application/json": {"schema": {
                         "type": "object", "additionalProperties": false, "required": ["metadata", "spec"],
                         "properties": {
                             "metadata": {"$ref": "#/components/schemas/Metadata"},
                             "spec": {"type": "object", "additionalProperties": false,
                                      "required": ["projects", "role", "expires"], "properties": {
                                 "projects": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": specs::NAME_PATTERN}},
                                 "role": {"type": "string", "enum": ["viewer", "editor"]},
                                 "expires": {"type": "string", "description": "an RFC 3339 time to come, or a duration (30d, 12h)"}}}}}}}},
                     "responses": {"201": {"description": "issued"}, "400": errors["400"], "409": errors["409"]}},
        }),
    );
    paths.insert(
        token.into(),
        json!({
            "get": {"summary": "a scoped token", "parameters": parameters(token),
                    "responses": {"200": {"description": "the token"}, "404": errors["404"]}},
            "delete": {"summary": "revoke a scoped token, at once on every host", "parameters": parameters(token),
                       "responses": {"204": {"description": "revoked"}, "404": errors["404"]}},
        }),
    );
}

/// The DIG actions and the context read-back.
fn document_deployments(paths: &mut serde_json::Map<String, Value>) {
    let dig = Kind::DeploymentIntentGroup.item_route();
    for action in super::deployments::DigAction::ALL {
        let action_name = action.route();
        let route = format!("{dig}/{action_name}");
        let errors = error_responses();
        let mut op = json!({
            "summary": format!("{action_name} the deployment intent group"),
            "parameters": parameters(&route),
            "responses": {
                "202": wire::answers::<DeploymentState>("done; the DIG's state and history"),
                "404": errors["404"],
                "409": merge(&errors["409"], "the DIG's state does not allow this action"),
                "422": merge(&errors["422"], "a controller or the DIG's inputs failed; nothing changed"),
            }
        });
        if action == super::deployments::DigAction::Migrate {
            op["summary"] = json!(
                "move the deployed DIG's objects to another version's Approved DIG, as one update: that DIG is instantiated and takes them over, this one is Terminated"
            );
            // EMCO's body, or its spec alone (emcoctl posts that); older
            // EMCO spelled the fields with dashes.
            let name = json!({"type": "string", "minLength": 1});
            let target = json!({"type": "object", "properties": {
                    "targetCompositeAppVersion": name, "targetDeploymentIntentGroup": name,
                    "target-composite-app-version": name, "target-dig-name": name},
                "allOf": [
                    {"anyOf": [{"required": ["targetCompositeAppVersion"]},
                               {"required": ["target-composite-app-version"]}]},
                    {"anyOf": [{"required": ["targetDeploymentIntentGroup"]},
                               {"required": ["target-dig-name"]}]}]});
            let mut alone = target.clone();
            alone["not"] = json!({"required": ["spec"]});
            op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"anyOf": [
                {"type": "object", "required": ["spec"], "properties": {"spec": target}},
                alone]}}}});
            op["responses"]["400"] = errors["400"].clone();
            op["responses"]["202"] =
                wire::answers::<DeploymentState>("done; the target DIG's state and history");
        }
        if action == super::deployments::DigAction::Rollback {
            // EMCO's body (the revision a string under spec) or the short one.
            let revision = json!({"oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "string", "pattern": "^\\s*0*[1-9][0-9]{0,18}\\s*$"}]});
            op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"oneOf": [
                {"type": "object", "required": ["spec"], "properties": {
                    "spec": {"type": "object", "required": ["revision"], "properties": {"revision": revision}}}},
                {"type": "object", "required": ["revision"], "not": {"required": ["spec"]},
                 "properties": {"revision": revision}}]}}}});
            op["responses"]["400"] = merge(&errors["400"], "the body names no revision number");
        }
        paths.insert(route, json!({ "post": op }));
    }
    let route = format!("{dig}/status");
    let mut params = parameters(&route);
    params.extend(status_query());
    paths.insert(route, json!({"get": {
        "summary": "what rsync did with the DIG's current context, per app, cluster and resource (EMCO's status shape); the app service-discovery holds what service discovery made known on the clients' clusters, and serviceDiscovery says why it did not (yet)",
        "parameters": params,
        "responses": {"200": wire::answers::<DeploymentStatus>("the status"), "404": error_responses()["404"]}}}));
    let route = format!("{dig}/context");
    let mut params = parameters(&route);
    for name in ["app", "cluster", "revision"] {
        let schema = if name == "revision" {
            json!({"type": "integer", "minimum": 1})
        } else {
            json!({"type": "string"})
        };
        params.push(
            json!({"name": name, "in": "query", "required": false, "schema": schema,
            "description": match name {
                "cluster" => "provider+cluster, as EMCO writes it",
                "revision" => "a kept revision instead of the current one",
                _ => "only this app",
            }}),
        );
    }
    paths.insert(route, json!({"get": {
        "summary": "the computed AppContext: per app, its clusters and their final manifests (JSON, or YAML with Accept: application/yaml)",
        "parameters": params,
        "responses": {"200": wire::answers::<ContextBody>("the context (JSON, or YAML with Accept: application/yaml)"), "404": error_responses()["404"], "422": error_responses()["422"]}}}));
}

/// The query of a status (a DIG's, a logical cloud's, a cluster's
/// networks'), as EMCO takes it.
fn status_query() -> Vec<Value> {
    let one_of = |values: &[&str]| json!({"type": "string", "enum": values});
    let list = json!({"type": "array", "items": {"type": "string"}});
    [
        (
            "status",
            one_of(&["deployed", "ready"]),
            "deployed (default) or ready",
        ),
        (
            "output",
            one_of(&["summary", "all", "detail"]),
            "summary, all (default) or detail",
        ),
        (
            "type",
            one_of(&["rsync", "cluster"]),
            "rsync (default) or cluster: the same answer, read from the clusters",
        ),
        (
            "apps",
            list.clone(),
            "only these apps (repeated or comma-separated)",
        ),
        ("app", list.clone(), "as apps"),
        (
            "clusters",
            list.clone(),
            "only these provider+cluster (repeated or comma-separated)",
        ),
        ("cluster", list.clone(), "as clusters"),
        (
            "resources",
            list.clone(),
            "only resources of these names (repeated or comma-separated)",
        ),
        ("resource", list, "as resources"),
    ]
    .into_iter()
    .map(|(name, schema, description)| {
        json!({"name": name, "in": "query", "required": false, "schema": schema,
               "explode": true, "description": description})
    })
    .collect()
}

/// A cluster's PKI.
fn document_pki(paths: &mut serde_json::Map<String, Value>) {
    let cluster = Kind::Cluster.item_route();
    let errors = error_responses();
    let json_body = |required: &[&str], properties: Value| {
        json!({"required": true, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": false, "required": required,
            "properties": properties}}}})
    };
    let pem = json!({"type": "string", "description": "PEM"});
    let certificate = json!({"description": "the certificate", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"certificate": pem}}}}});
    let failures = json!({"400": errors["400"], "404": errors["404"],
        "422": merge(&errors["422"], "the input cannot be used; `field` names it")});
    let with = |mut responses: Value, code: &str, ok: Value| {
        responses[code] = ok;
        responses
    };
    let route = format!("{cluster}/{}", super::clusters::STATUS_ROUTE);
    let mut params = parameters(&route);
    params.extend(status_query());
    paths.insert(route.clone(), json!({"get": {
        "summary": "whether rsync reaches the cluster: state (Reachable, Unreachable, Unknown before the first probe), since, lastError, version; and its network intents' status (deployedStatus, deployedCounts and apps as a DIG status has them, with the same query)",
        "parameters": params,
        "responses": {"200": wire::answers::<DeploymentStatus>("the cluster's health and network status"), "400": errors["400"], "404": errors["404"]}}}));
    for action in super::clusters::NetworkAction::ALL {
        let route = format!("{cluster}/{}", action.route());
        paths.insert(route.clone(), json!({"post": {
            "summary": match action {
                super::clusters::NetworkAction::Apply => "hand the cluster's networks and provider networks to rsync as ovn4nfv Network, ProviderNetwork and NetworkAttachmentDefinition objects (again, as they are now, when applied)",
                super::clusters::NetworkAction::Terminate => "remove the cluster's network objects",
                super::clusters::NetworkAction::Stop => "stop rsync's work on the cluster's network objects",
            },
            "parameters": parameters(&route),
            "responses": {"202": wire::answers::<DeploymentState>("done; the network intents' state"), "404": errors["404"],
                          "409": merge(&errors["409"], "their state does not allow this action")}}}));
    }
    let route = format!("{cluster}/ca");
    paths.insert(route.clone(), json!({
        "post": {"summary": "create the cluster's CA, or import one with {certificate, key}",
                 "parameters": parameters(&route),
                 "requestBody": {"required": false, "content": {"application/json": {"schema": {
                     "type": "object", "additionalProperties": false,
                     "anyOf": [{"required": ["certificate", "key"]},
                               {"not": {"anyOf": [{"required": ["certificate"]}, {"required": ["key"]}]}}],
                     "properties": {"certificate": pem, "key": pem}}}}},
                 "responses": with(with(failures.clone(), "201", certificate.clone()), "409",
                     merge(&errors["409"], "the cluster already has a CA"))},
        "get": {"summary": "the cluster's CA certificate (never its key)", "parameters": parameters(&route),
                "responses": {"200": certificate.clone(), "404": errors["404"]}},
    }));
    let route = format!("{cluster}/admin-kubeconfig");
    paths.insert(route.clone(), json!({"post": {
        "summary": "a new admin.kubeconfig (client certificate in system:masters) for the cluster's API",
        "parameters": parameters(&route),
        "requestBody": json_body(&["server"], json!({"server": {"type": "string", "description": "https:// URL of the API"}})),
        "responses": with(failures.clone(), "200", json!({"description": "the kubeconfig", "content": {"application/yaml": {}}}))}}));
    let route = format!("{cluster}/bootstrap-bundle");
    paths.insert(route.clone(), json!({"post": {
        "summary": "kubeadm's certificate set for a control-plane node, as /etc/kubernetes/pki in a .tar.gz",
        "parameters": parameters(&route),
        "requestBody": json_body(&["node"], json!({"node": {"type": "string"}, "sans": {"type": "array", "items": {"type": "string"}}})),
        "responses": with(failures.clone(), "200", json!({"description": "the bundle", "content": {"application/gzip": {}}}))}}));
    let route = format!("{cluster}/csr");
    paths.insert(route.clone(), json!({"post": {
        "summary": "sign a node's CSR: system:node:NAME / system:nodes, client auth, or server auth with SANs",
        "parameters": parameters(&route),
        "requestBody": json_body(&["csr"], json!({"csr": pem})),
        "responses": with(failures, "200", certificate)}}));
}

/// A caCert's enrollment and distribution, for a provider's and a project's.
fn document_ca_certs(paths: &mut serde_json::Map<String, Value>) {
    use super::ca_certs::CertAction;
    use wasmco_orchestrator::CertStage;
    let errors = error_responses();
    for cert in [Kind::CaCert, Kind::ProjectCaCert] {
        for stage in super::ca_certs::STAGES {
            let stage_route = format!("{}/{}", cert.item_route(), stage.route());
            for action in CertAction::ALL {
                let route = format!("{stage_route}/{}", action.route());
                let summary = match (stage, action) {
                    (CertStage::Enrollment, CertAction::Instantiate) => {
                        "sign each selected cluster's CA certificate with the issuer's CA, read from the issuing cluster"
                    }
                    (CertStage::Distribution, CertAction::Instantiate) => {
                        "put each cluster's CA on it: a Secret, a ClusterIssuer, KNCC's ConfigCtrl for Istio and (a project's) a ProxyConfig per logical cloud namespace"
                    }
                    (CertStage::Enrollment, CertAction::Terminate) => {
                        "forget the signed keys (after the distribution is terminated)"
                    }
                    (CertStage::Distribution, CertAction::Terminate) => {
                        "remove what the distribution put on the clusters"
                    }
                    (CertStage::Enrollment, CertAction::Update) => {
                        "sign anew for the clusters the groups select now"
                    }
                    (CertStage::Distribution, CertAction::Update) => {
                        "make the clusters hold what the enrollment signed last"
                    }
                };
                paths.insert(route.clone(), json!({"post": {
                    "summary": summary,
                    "parameters": parameters(&route),
                    "responses": {"202": wire::answers::<DeploymentState>("done; the stage's state"), "404": errors["404"],
                                  "409": merge(&errors["409"], "its state (or the other stage's) does not allow this action"),
                                  "422": merge(&errors["422"], "no cluster selected, an issuer that cannot sign, or a project's token")}}}));
            }
            let route = format!("{stage_route}/status");
            let mut params = parameters(&route);
            params.extend(status_query());
            paths.insert(
                route.clone(),
                json!({"get": {
                "summary": "what rsync did with the stage, in a DIG status's shape",
                "parameters": params,
                "responses": {"200": wire::answers::<DeploymentStatus>("the status"), "404": errors["404"]}}}),
            );
        }
    }
}

/// A logical cloud's actions, status and user kubeconfigs.
fn document_logical_clouds(paths: &mut serde_json::Map<String, Value>) {
    let lc = Kind::LogicalCloud.item_route();
    let errors = error_responses();
    for action in super::logical_clouds::CloudAction::ALL {
        let route = format!("{lc}/{}", action.route());
        paths.insert(route.clone(), json!({"post": {
            "summary": match action {
                super::logical_clouds::CloudAction::Instantiate => "get the user a certificate on every referenced cluster (from its stored CA, else its CSR API) and create the namespace, roles and ResourceQuota there",
                super::logical_clouds::CloudAction::Terminate => "remove what instantiate created",
                super::logical_clouds::CloudAction::Update => "make the cloud on its clusters what its references, permissions and quotas are now",
                super::logical_clouds::CloudAction::Stop => "stop rsync's work on the cloud (InstantiateStopped or TerminateStopped)",
            },
            "parameters": parameters(&route),
            "responses": {"202": wire::answers::<DeploymentState>("done; the logical cloud's state"), "404": errors["404"],
                          "409": merge(&errors["409"], "its state does not allow this action"),
                          "422": merge(&errors["422"], "no cluster referenced, or a cluster without a CA")}}}));
    }
    let route = format!("{lc}/status");
    let mut params = parameters(&route);
    params.extend(status_query());
    paths.insert(
        route.clone(),
        json!({"get": {
        "summary": "what rsync did with the logical cloud, in a DIG status's shape",
        "parameters": params,
        "responses": {"200": wire::answers::<DeploymentStatus>("the status"), "404": errors["404"]}}}),
    );
    let route = format!(
        "{}/kubeconfig",
        Kind::LogicalCloudClusterReference.item_route()
    );
    paths.insert(route.clone(), json!({"get": {
        "summary": "the logical cloud user's kubeconfig for this cluster (client certificate from the cluster's CA)",
        "parameters": parameters(&route),
        "responses": {"200": {"description": "the kubeconfig", "content": {"application/yaml": {}}}, "404": errors["404"]}}}));
}
