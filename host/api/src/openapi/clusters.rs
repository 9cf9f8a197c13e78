//! A cluster's network actions and status, and its PKI.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::wire::{DeploymentState, DeploymentStatus};

use super::parts::{error_responses, merge, parameters, status_query};
use super::wire;

/// A cluster's PKI.
pub(super) fn document_pki(paths: &mut serde_json::Map<String, Value>) {
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
    let route = format!("{cluster}/{}", crate::clusters::STATUS_ROUTE);
    let mut params = parameters(&route);
    params.extend(status_query());
    paths.insert(route.clone(), json!({"get": {
        "summary": "whether rsync reaches the cluster: state (Reachable, Unreachable, Unknown before the first probe), since, lastError, version; and its network intents' status (deployedStatus, deployedCounts and apps as a DIG status has them, with the same query)",
        "parameters": params,
        "responses": {"200": wire::answers::<DeploymentStatus>("the cluster's health and network status"), "400": errors["400"], "404": errors["404"]}}}));
    for action in crate::clusters::NetworkAction::ALL {
        let route = format!("{cluster}/{}", action.route());
        paths.insert(route.clone(), json!({"post": {
            "summary": match action {
                crate::clusters::NetworkAction::Apply => "hand the cluster's networks and provider networks to rsync as ovn4nfv Network, ProviderNetwork and NetworkAttachmentDefinition objects (again, as they are now, when applied)",
                crate::clusters::NetworkAction::Terminate => "remove the cluster's network objects",
                crate::clusters::NetworkAction::Stop => "stop rsync's work on the cluster's network objects",
            },
            "parameters": parameters(&route),
            "responses": {"202": wire::answers::<DeploymentState>("done; the network intents' state"), "404": errors["404"],
                          "409": merge(&errors["409"], "their state does not allow this action")}}}));
        if matches!(action, crate::clusters::NetworkAction::Apply) {
            // A network's EMCO name may not be a Kubernetes object's name.
            paths[&route]["post"]["responses"]["422"] = merge(
                &errors["422"],
                "an intent makes an object Kubernetes would refuse (a network named outside RFC 1123)",
            );
        }
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
