//! The hosts sharing the store, the status page's overview and the
//! scoped tokens.

use serde_json::{Value, json};

use super::parts::{error_responses, merge, parameters};
use super::{specs, wire};
use wasmco_core::wire::GitOpsStatus;

/// The hosts sharing the store, and the scoped tokens (admin only).
pub(super) fn document_hosts_and_tokens(paths: &mut serde_json::Map<String, Value>) {
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
        json!({"get": {"summary": "what the status page at /ui shows (admin only): every DIG with its state, revision, actions and per app × cluster cell (deployed, ready, resource counts, connectivity); every cluster with its labels, reachability, server version and the deployed DIGs on it; every controller with its type, priority, limits and its calls since the host started (counts, the last 20 with duration and outcome); every cluster deployment's status (state, phase, each machine's step and last error)",
                       "responses": {"200": {"description": "{digs, clusters, controllers, clusterDeployments}"},
                                     "503": unavailable.clone()}}}),
    );
    paths.insert(
        "/v2/gitops".into(),
        json!({"get": {"summary": "GitOps mode (`wasmco serve --cluster-repo`): the repository, the commit last read, and per deploy file its cluster deployment, state, the last commit it reached, the action last started and what stops it (a file that is not a valid Eggo deploy file, by field)",
                       "responses": {"200": wire::answers::<GitOpsStatus>("the status"),
                                     "404": merge(&errors["404"], "no host of this store follows a cluster repository"),
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
