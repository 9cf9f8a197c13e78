//! A deployment intent group's actions, status and context.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::wire::{ContextBody, DeploymentState, DeploymentStatus, RolloutStatus};

use super::parts::{error_responses, merge, parameters, status_query};
use super::wire;
use crate::deployments::DigAction;

/// The DIG actions and the context read-back.
pub(super) fn document_deployments(paths: &mut serde_json::Map<String, Value>) {
    let dig = Kind::DeploymentIntentGroup.item_route();
    for action in DigAction::ALL {
        let route = format!("{dig}/{}", action.route());
        let op = dig_action(action, &route);
        paths.insert(route, json!({ "post": op }));
    }
    let route = format!("{dig}/status");
    let mut params = parameters(&route);
    params.extend(status_query());
    paths.insert(route, json!({"get": {
        "summary": "what rsync did with the DIG's current context, per app, cluster and resource (EMCO's status shape); the app service-discovery holds what service discovery made known on the clients' clusters, and serviceDiscovery says why it did not (yet)",
        "parameters": params,
        "responses": {"200": wire::answers::<DeploymentStatus>("the status"), "404": error_responses()["404"]}}}));
    let route = format!("{dig}/rollout");
    paths.insert(route.clone(), json!({"get": {
        "summary": "the progressive rollout of the DIG's current revision (its rollout intent's): the groups, how many went, and whether it progresses, is paused, stopped (and why) or done",
        "parameters": parameters(&route),
        "responses": {"200": wire::answers::<RolloutStatus>("the rollout and its groups"), "404": error_responses()["404"]}}}));
    for (name, _) in crate::deployments::ROLLOUT_ACTIONS {
        let route = format!("{dig}/rollout/{name}");
        let errors = error_responses();
        paths.insert(route.clone(), json!({"post": {
            "summary": match name {
                "pause" => "pause the rollout: no further group goes until it is resumed",
                "resume" => "resume a paused or stopped rollout (a stopped group's timeout starts again)",
                _ => "abort the rollout: roll back to the revision before it (an instantiate's is terminated)",
            },
            "parameters": parameters(&route),
            "responses": {
                "202": wire::answers::<DeploymentState>("done; the DIG's state and history"),
                "404": errors["404"],
                "409": merge(&errors["409"], "no rollout under way, or not in a phase this action applies to"),
            }}}));
    }
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

/// A DIG action's operation at `route`: its body (a migrate's target, a
/// rollback's revision) and what it answers.
fn dig_action(action: DigAction, route: &str) -> Value {
    let action_name = action.route();
    let errors = error_responses();
    let mut op = json!({
        "summary": format!("{action_name} the deployment intent group"),
        "parameters": parameters(route),
        "responses": {
            "202": wire::answers::<DeploymentState>("done; the DIG's state and history"),
            "404": errors["404"],
            "409": merge(&errors["409"], "the DIG's state does not allow this action"),
            "422": merge(&errors["422"], "a controller or the DIG's inputs failed; nothing changed"),
        }
    });
    if action == DigAction::Migrate {
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
    if action == DigAction::Rollback {
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
    op
}
