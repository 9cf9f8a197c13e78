//! The whole document: the kind table's paths, every area's, and the
//! components they refer to.

use serde_json::{Value, json};

use wasmco_core::{BodyShape, FileKind, Kind};

use super::ca_certs::document_ca_certs;
use super::cluster_deployments::document_cluster_deployments;
use super::clusters::document_pki;
use super::declared::document_declared;
use super::deployments::document_deployments;
use super::hosts::document_hosts_and_tokens;
use super::logical_clouds::document_logical_clouds;
use super::parts::{error_responses, merge, parameters};
use super::{specs, wire};

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

/// The document served at `/v2/openapi.json`, without declared kinds.
pub fn document() -> Value {
    let mut paths = serde_json::Map::new();
    document_kinds(&mut paths);
    document_deployments(&mut paths);
    document_pki(&mut paths);
    document_logical_clouds(&mut paths);
    document_ca_certs(&mut paths);
    document_cluster_deployments(&mut paths);
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
        schemas.extend(specs::components());
    }
    document
}

/// Every kind of the table: its collection (list, create) and its item
/// (get, update, delete).
fn document_kinds(paths: &mut serde_json::Map<String, Value>) {
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
                FileKind::DeployFile => "Eggo's deploy file (YAML), unchanged",
                FileKind::MachineLogin => {
                    "a kubernetes.io/basic-auth or kubernetes.io/ssh-auth Secret (YAML or JSON), as Eggops takes it"
                }
            };
            let mut properties = json!({
                "metadata": merge(&document, "the document (metadata and spec), as JSON"),
                "file": {"type": "string", "format": "binary", "description": description}
            });
            if file == FileKind::DeployFile {
                properties["privateKey"] = json!({"type": "string", "format": "binary",
                    "description": "the SSH private key the deploy file's private-key-path names"});
            }
            // A cluster deployment made from `spec.request` has no file.
            let required = if file == FileKind::DeployFile {
                json!(["metadata"])
            } else {
                json!(["metadata", "file"])
            };
            json!({"required": true, "content": {"multipart/form-data": {
            "schema": {
                "type": "object",
                "additionalProperties": false,
                "required": required,
                "properties": properties},
            "encoding": {"metadata": {"contentType": "application/json"}}}}})
        }
    }
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
