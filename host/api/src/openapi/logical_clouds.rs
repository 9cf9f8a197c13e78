//! A logical cloud's actions, status and user kubeconfigs.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::wire::{DeploymentState, DeploymentStatus};

use super::parts::{error_responses, merge, parameters, status_query};
use super::wire;

/// A logical cloud's actions, status and user kubeconfigs.
pub(super) fn document_logical_clouds(paths: &mut serde_json::Map<String, Value>) {
    let lc = Kind::LogicalCloud.item_route();
    let errors = error_responses();
    for action in crate::logical_clouds::CloudAction::ALL {
        let route = format!("{lc}/{}", action.route());
        paths.insert(route.clone(), json!({"post": {
            "summary": match action {
                crate::logical_clouds::CloudAction::Instantiate => "get the user a certificate on every referenced cluster (from its stored CA, else its CSR API) and create the namespace, roles and ResourceQuota there",
                crate::logical_clouds::CloudAction::Terminate => "remove what instantiate created",
                crate::logical_clouds::CloudAction::Update => "make the cloud on its clusters what its references, permissions and quotas are now",
                crate::logical_clouds::CloudAction::Stop => "stop rsync's work on the cloud (InstantiateStopped or TerminateStopped)",
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
