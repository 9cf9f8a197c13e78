//! sfcclient, EMCO's service function chain client controller, as a
//! wasmco action controller.
//!
//! An sfc client intent (see `intents.json`) says that an app of this
//! deployment is a client at one end of a chain that another deployment
//! intent group of the project deploys. The chain's client selectors at
//! that end say which pods, in which namespaces, Nodus routes into the
//! chain; this controller gives the client app's pods the labels of the
//! first of those selectors whose namespace selector this deployment's
//! logical cloud matches (its labels are its namespace's), on every cluster
//! the app is placed on. As EMCO's, it acts on every sfc client intent of
//! the deployment, whatever name the `intents` document gives, and does
//! not need the chain to be deployed, only to exist.

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "action-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

use std::collections::BTreeMap;

pub use bindings::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, ClusterScope, Patch, PatchResource,
};
pub use bindings::wasmco::controller::types::{
    ClusterTable, ControllerError, ResourceRef, Strings,
};
use serde::Deserialize;
use serde_json::{Value, json};
use wasmco_guest::intents::{IntentNode, IntentTree};

wasmco_guest::declare_intents!("../intents.json");

/// An sfc client intent's spec.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClientSpec {
    chain_end: String,
    sfc_intent: String,
    composite_app: String,
    #[serde(default)]
    composite_app_version: String,
    deployment_intent_group: String,
    app: String,
    workload_resource: String,
    resource_type: String,
}

/// Labels the client apps' pods for their chains.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let tree = IntentTree::parse_all(&request.intent)
        .map_err(|e| error(format!("the sfcclient intent tree is not valid: {e}")))?;
    if tree.all.is_empty() {
        return Err(error(format!(
            "no sfc client intents (sfc-clients) are defined for deployment intent group {:?}",
            tree.deployment_intent_group.name
        )));
    }
    let cloud_labels = &tree.deployment_intent_group.logical_cloud_labels;
    let mut edits = Vec::new();
    for client in &tree.all {
        let client_error =
            |reason: String| error(format!("sfc client intent {:?}: {reason}", client.name()));
        let spec: ClientSpec = serde::Deserialize::deserialize(&client.spec)
            .map_err(|e| client_error(format!("spec is not valid: {e}")))?;
        let chain = chain_of(&tree, &spec).map_err(client_error)?;
        let labels = pod_labels(chain, &spec.chain_end, cloud_labels).ok_or_else(|| {
            client_error(format!(
                "no client selector at the {} end of sfc intent {:?} matches the labels of \
                 logical cloud {:?} ({})",
                spec.chain_end,
                spec.sfc_intent,
                tree.deployment_intent_group.logical_cloud,
                describe(cloud_labels)
            ))
        })?;
        let patch =
            wasmco_guest::pods::metadata_patch(&spec.resource_type, json!({"labels": labels}))
                .ok_or_else(|| {
                    client_error(format!(
                        "{} is not a kind whose pods sfcclient can label",
                        spec.resource_type
                    ))
                })?;
        edits.push(ActionEdit::Patch(PatchResource {
            app: spec.app.clone(),
            scope: ClusterScope::All,
            target: ResourceRef {
                kind: spec.resource_type.clone(),
                name: spec.workload_resource.clone(),
            },
            patch: Patch::MergePatch(patch.to_string()),
        }));
    }
    Ok(edits)
}

/// The chain the client names, in the project's other groups.
fn chain_of<'a>(tree: &'a IntentTree, spec: &ClientSpec) -> Result<&'a IntentNode, String> {
    let group = tree
        .others
        .iter()
        .find(|g| {
            g.composite_app == spec.composite_app
                && (spec.composite_app_version.is_empty()
                    || g.composite_app_version == spec.composite_app_version)
                && g.name == spec.deployment_intent_group
        })
        .ok_or_else(|| {
            format!(
                "deployment intent group {}/{}/{} has no sfc intents",
                spec.composite_app, spec.composite_app_version, spec.deployment_intent_group
            )
        })?;
    group
        .intents
        .iter()
        .find(|chain| chain.name() == spec.sfc_intent)
        .ok_or_else(|| {
            format!(
                "sfc intent {:?} is not in deployment intent group {}",
                spec.sfc_intent, spec.deployment_intent_group
            )
        })
}

/// The pod labels of the chain's first client selector at `end` whose
/// namespace selector's labels are all the cloud's: an empty namespace
/// selector matches no cloud, as in EMCO.
fn pod_labels(chain: &IntentNode, end: &str, cloud: &BTreeMap<String, String>) -> Option<Value> {
    chain
        .children("client-selectors")
        .iter()
        .find_map(|selector| {
            let spec = &selector.spec;
            if spec["chainEnd"] != end {
                return None;
            }
            let wanted = spec["namespaceSelector"]["matchLabels"].as_object()?;
            let matches = !wanted.is_empty()
                && wanted
                    .iter()
                    .all(|(key, value)| cloud.get(key).is_some_and(|v| value == v.as_str()));
            matches.then(|| spec["podSelector"]["matchLabels"].clone())
        })
}

fn describe(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return "it has none".to_owned();
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct SfcClient;

    impl super::bindings::exports::wasmco::controller::action::Guest for SfcClient {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(SfcClient with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
