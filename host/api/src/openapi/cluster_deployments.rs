//! A cluster deployment's `deploy` and `cleanup` actions and its status.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::wire::{ClusterDeploymentAction, ClusterDeploymentStatus};

use super::parts::{error_responses, merge, parameters};
use super::wire;

pub(super) fn document_cluster_deployments(paths: &mut serde_json::Map<String, Value>) {
    let errors = error_responses();
    let item = Kind::ClusterDeployment.item_route();
    for action in ClusterDeploymentAction::ALL {
        let route = format!("{item}/{}", action.route());
        let (summary, conflict) = match action {
            ClusterDeploymentAction::Deploy => (
                "make the cluster on its machines over SSH (or resume a stopped deploy, or converge a deployed one), then register it under the provider and hand its addons to rsync; answers at once",
                "a run of it is under way, or its cluster's name is taken",
            ),
            ClusterDeploymentAction::Cleanup => (
                "take the cluster down (Eggo's cleanup): precleanup hooks, its services stopped and what the deploy put on the machines removed, postcleanup hooks, then the cluster unregistered; answers at once",
                "a run of it is under way, it was never deployed, or something wasmco deployed (a DIG, a logical cloud, network intents) is still on its cluster",
            ),
        };
        paths.insert(route.clone(), json!({"post": {
            "summary": summary,
            "parameters": parameters(&route),
            "responses": {"202": wire::answers::<ClusterDeploymentStatus>("the run started; its status"),
                          "404": errors["404"],
                          "409": merge(&errors["409"], conflict),
                          "422": merge(&errors["422"], "its deploy file no longer passes (a package archive gone from the host)")}}}));
    }
    let route = format!("{item}/{}", crate::cluster_deployments::STATUS_ROUTE);
    paths.insert(
        route.clone(),
        json!({"get": {
        "summary": "the deployment's state, each machine's phase, step under way and last error, and what rsync did with the cluster's addons",
        "parameters": parameters(&route),
        "responses": {"200": wire::answers::<ClusterDeploymentStatus>("the status"), "404": errors["404"]}}}),
    );
}
