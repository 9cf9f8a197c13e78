//! A cluster deployment's actions (`deploy`, `cleanup`, `join`, `delete`,
//! `upgrade`) and its status.

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
        let (summary, conflict, body) = match action {
            ClusterDeploymentAction::Deploy => (
                "make the cluster on its machines over SSH (or resume a stopped deploy, or converge a deployed one), then register it under the provider and hand its addons to rsync; answers at once",
                "a run of it is under way, or its cluster's name is taken",
                None,
            ),
            ClusterDeploymentAction::Cleanup => (
                "take the cluster down (Eggo's cleanup): precleanup hooks, its services stopped and what the deploy put on the machines removed, postcleanup hooks, then the cluster unregistered; with force, what wasmco deployed there is terminated first; answers at once",
                "a run of it is under way, it was never deployed, or something wasmco deployed (a DIG, a logical cloud, network intents) is still on its cluster and force is not set",
                Some((
                    wire::reference::<wasmco_core::wire::CleanupRequest>(),
                    false,
                )),
            ),
            ClusterDeploymentAction::Join => (
                "add machines to the deployed cluster (Eggo's join; the body is Eggo's join file as JSON): they are added to the deploy file, then set up (a master's etcd member joins as a learner and is promoted, a worker's kubelet bootstraps through the CSR API); answers at once",
                "a run of it is under way, no deploy of it finished, or a machine's name or address is taken",
                Some((wire::reference::<wasmco_core::eggo::JoinFile>(), true)),
            ),
            ClusterDeploymentAction::Delete => (
                "take machines out of the deployed cluster (Eggo's delete): each is cordoned and drained (bounded), its etcd member removed, its services stopped and what the deploy put there removed, its Node deleted; then it leaves the deploy file; answers at once",
                "a run of it is under way, or no deploy of it finished",
                Some((wire::reference::<wasmco_core::wire::NodeRemoval>(), true)),
            ),
            ClusterDeploymentAction::Upgrade => (
                "roll the deploy file as stored now (replace it first, with a package archive carrying the new Kubernetes or etcd) out over the machines one at a time: the masters first, each API server ready before the next, then each worker cordoned, drained, upgraded, Ready and uncordoned before the next; each binary replaced is kept beside the new one as NAME.wasmco-previous; answers at once",
                "a run of it is under way, or no deploy of it finished",
                None,
            ),
        };
        let mut operation = json!({
            "summary": summary,
            "parameters": parameters(&route),
            "responses": {"202": wire::answers::<ClusterDeploymentStatus>("the run started; its status"),
                          "404": errors["404"],
                          "409": merge(&errors["409"], conflict),
                          "422": merge(&errors["422"], "its deploy file no longer passes (a package archive gone from the host), or a machine named is not the cluster's or is its first master")}});
        if let Some((schema, required)) = body {
            operation["requestBody"] =
                json!({"required": required, "content": {"application/json": {"schema": schema}}});
            operation["responses"]["400"] = errors["400"].clone();
        }
        paths.insert(route.clone(), json!({"post": operation}));
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
