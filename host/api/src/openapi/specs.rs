//! The JSON Schema of each kind's `spec`, as the checks in
//! `wasmco_core::specs` hold it: what a schema can say (fields, types,
//! names' and namespaces' shapes, closed objects) is said here, so that a
//! body the document calls valid is refused only for what a schema cannot
//! say (a name of something that does not exist, a file's content).

use serde_json::{Value, json};

use wasmco_core::Kind;

/// EMCO's naming rule.
pub const NAME_PATTERN: &str = "^[A-Za-z0-9]([A-Za-z0-9_.-]{0,126}[A-Za-z0-9])?$";

/// A Kubernetes namespace's (a DNS-1123 label's) shape.
const NAMESPACE_PATTERN: &str = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$";

fn name() -> Value {
    json!({"type": "string", "pattern": NAME_PATTERN})
}

fn namespace() -> Value {
    json!({"type": "string", "pattern": NAMESPACE_PATTERN})
}

/// A closed object: `required` of `properties`, nothing else.
fn object(required: &[&str], properties: Value) -> Value {
    json!({"type": "object", "additionalProperties": false, "required": required,
           "properties": properties})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// A field that may also be `null` (read as left out).
fn or_null(mut schema: Value) -> Value {
    schema["nullable"] = json!(true);
    schema
}

/// Text without control characters (what the checks call printable).
const PRINTABLE: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$";

/// Any object: the kinds whose spec is free (or EMCO's, kept as given).
fn free() -> Value {
    json!({"type": "object"})
}

/// Whether `kind`'s spec has fields it cannot do without (so the document
/// must carry a spec).
pub fn spec_required(kind: Kind) -> bool {
    let spec = spec(kind);
    spec["required"].as_array().is_some_and(|r| !r.is_empty()) || spec.get("oneOf").is_some()
}

/// The schema of `kind`'s spec.
pub fn spec(kind: Kind) -> Value {
    match kind {
        Kind::ClusterProvider
        | Kind::Cluster
        | Kind::Project
        | Kind::App
        | Kind::CompositeProfile
        | Kind::GenericPlacementIntent
        | Kind::ControllerIntent
        // Each declared kind's schema is its controller's.
        | Kind::Intent => free(),
        // A label's body has no spec; the table sends it elsewhere.
        Kind::ClusterLabel => free(),
        Kind::ClusterKvPair | Kind::LogicalCloudKvPair => object(
            &["kv"],
            json!({"kv": {"type": "array", "items": {"type": "object",
                "additionalProperties": {"type": "string"}}}}),
        ),
        Kind::Controller => controller(),
        Kind::CompositeApp => {
            json!({"type": "object", "required": ["compositeAppVersion"],
                   "properties": {"compositeAppVersion": name()}})
        }
        Kind::AppDependency => object(
            &["app"],
            json!({"app": name(), "opStatus": {"type": "string", "enum": ["Ready", "Deployed"]},
                   "wait": {"type": "integer", "minimum": 0}}),
        ),
        Kind::AppProfile => {
            json!({"type": "object", "required": ["app"], "properties": {"app": name()}})
        }
        Kind::DeploymentIntentGroup => deployment_intent_group(),
        Kind::DigIntent => object(
            &["intent"],
            // A name, or what emcoctl writes for a value left unset.
            json!({"intent": {"type": "object", "additionalProperties": {"anyOf": [
                name(),
                {"type": "string", "enum": [wasmco_core::specs::UNSET_INTENT_NAME]},
            ]}}}),
        ),
        Kind::GenericAppIntent => generic_app_intent(),
        // An admin cloud (level 0) needs nothing else; a standard one its
        // namespace (its user is `<project>:<cloud>` when not given).
        Kind::LogicalCloud => logical_cloud(),
        Kind::LogicalCloudClusterReference => object(
            &["clusterProvider", "cluster"],
            json!({"clusterProvider": name(), "cluster": name(),
                   "loadBalancerIP": {"type": "string"}, "certificate": {"type": "string"}}),
        ),
        Kind::LogicalCloudUserPermission => object(
            &["verbs"],
            json!({"namespace": or_null(json!({"type": "string", "pattern": format!("^$|{}", &NAMESPACE_PATTERN[1..])})),
                   "apiGroups": strings(), "resources": strings(),
                   "verbs": {"type": "array", "minItems": 1, "items": {"type": "string"}}}),
        ),
        Kind::LogicalCloudQuota => {
            json!({"type": "object", "additionalProperties": {"type": "string"}})
        }
        // What a schema cannot say is checked by the server (400): the
        // duration's range, a key size that fits the algorithm, a signature
        // algorithm that fits the key, one value per subject attribute.
        Kind::CaCert | Kind::ProjectCaCert => ca_cert(),
        Kind::CaCertClusterGroup | Kind::CaCertLcClusterGroup => object(
            &["scope", "clusterProvider"],
            json!({"scope": {"type": "string", "enum": ["name", "label"]},
                   "clusterProvider": name(), "cluster": {"type": "string"},
                   "label": {"type": "string"}}),
        ),
        Kind::CaCertLogicalCloud => object(&["logicalCloud"], json!({"logicalCloud": name()})),
        Kind::ClusterNetwork => object(&["cniType"], network_properties()),
        Kind::ClusterProviderNetwork => provider_network(),
        Kind::TenancyPolicy | Kind::ProviderTenancyPolicy => tenancy_policy(),
    }
}

fn network_properties() -> Value {
    json!({
        "cniType": {"type": "string", "enum": ["ovn4nfv"]},
        "ipv4Subnets": {"type": "array", "items": object(&["name", "subnet"], json!({
            "name": {"type": "string"}, "subnet": {"type": "string"},
            "gateway": {"type": "string"}, "excludeIps": {"type": "string"}}))},
    })
}

/// A controller's: its type, priority and limits tighter than the host's.
fn controller() -> Value {
    object(
        &["type"],
        json!({
            "type": {"type": "string", "enum": ["placement", "action"]},
            "priority": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
            "limits": object(&[], json!({
                "deadlineMs": {"type": "integer", "minimum": 1},
                "memoryBytes": {"type": "integer", "minimum": 1},
                "instances": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                "tables": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                "tableElements": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                "logBytes": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                "maxEdits": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                "outputBytes": {"type": "integer", "minimum": 1},
                "manifestBytes": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
            })),
        }),
    )
}

/// A DIG's: its profile, release and logical cloud, and apps' override values.
fn deployment_intent_group() -> Value {
    json!({"type": "object",
    "required": ["compositeProfile", "version"],
    "properties": {
        "compositeProfile": name(),
        "version": {"type": "string"},
        "logicalCloud": or_null(json!({"type": "string", "pattern": format!("^$|{}", &NAME_PATTERN[1..])})),
        "overrideValues": {"type": "array", "items": object(&["app", "values"],
            json!({"app": name(), "values": {"type": "object"}}))},
    }})
}

/// A generic placement intent's entry: clusters by name or label, or
/// groups of which one gets the app.
fn generic_app_intent() -> Value {
    let selector = object(
        &["clusterProvider"],
        json!({"clusterProvider": name(), "cluster": name(), "clusterLabel": name()}),
    );
    let one_of = |entry: Value| {
        json!({"oneOf": [
            {"allOf": [entry.clone(), {"required": ["cluster"]}, {"not": {"required": ["clusterLabel"]}}]},
            {"allOf": [entry, {"required": ["clusterLabel"]}, {"not": {"required": ["cluster"]}}]},
        ]})
    };
    let group = object(
        &["anyOf"],
        json!({"anyOf": {"type": "array", "items": one_of(selector.clone())}}),
    );
    let entries = json!({"type": "array",
        "items": {"oneOf": [one_of(selector), group]}});
    object(
        &["app", "intent"],
        json!({"app": name(), "intent": {"type": "object", "additionalProperties": false,
            "minProperties": 1,
            "properties": {"allOf": entries.clone(), "anyOf": entries}}}),
    )
}

fn logical_cloud() -> Value {
    json!({"oneOf": [
        {"type": "object", "required": ["level"], "properties": {
            "level": {"oneOf": [{"type": "string", "enum": ["0"]}, {"type": "integer", "enum": [0]}]},
            "namespace": {"type": "string", "pattern": format!("^$|{}", &NAMESPACE_PATTERN[1..])}}},
        {"type": "object", "required": ["namespace"], "properties": {
            "level": or_null(json!({"oneOf": [{"type": "string", "enum": ["1"]}, {"type": "integer", "enum": [1]}]})),
            "namespace": namespace(),
            "user": or_null(json!({"type": "object", "required": ["userName"], "properties": {
                "userName": {"type": "string", "minLength": 1, "maxLength": 253,
                             "pattern": "^[^/\\u0000-\\u001f\\u007f-\\u009f]+$"}}})),
            "labels": {"type": "object", "propertyNames": {"maxLength": 253, "pattern":
                "^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?){0,2}/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$"},
                "additionalProperties": {"type": "string", "maxLength": 63,
                "pattern": "^([A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?)?$"}}}},
    ]})
}

fn ca_cert() -> Value {
    let size = json!({"type": "integer", "minimum": 0, "maximum": 4294967295u64});
    object(
        &["issuerRef", "issuingCluster"],
        json!({
            "isCA": {"type": "boolean"},
            "issuerRef": object(&["name", "group"], json!({
                "name": name(),
                "kind": {"type": "string", "enum": ["ClusterIssuer", "Issuer"]},
                "group": {"type": "string", "enum": ["cert-manager.io"]},
                "version": {"type": "string", "enum": ["", "v1"]}})),
            "duration": {"type": "string", "description": "a Go duration (\"8760h\") of a minute to 100 years"},
            "issuingCluster": object(&["cluster", "clusterProvider"],
                json!({"cluster": name(), "clusterProvider": name()})),
            "csrInfo": object(&[], json!({
                "keySize": size.clone(),
                "version": size,
                "dnsNames": strings(),
                "emailAddresses": strings(),
                "keyUsages": {"type": "array", "items": {"type": "string", "enum": [
                    "digital signature", "content commitment", "key encipherment",
                    "key agreement", "data encipherment", "cert sign", "crl sign",
                    "server auth", "client auth", "code signing", "email protection",
                    "timestamping", "ocsp signing"]}},
                "algorithm": object(&[], json!({
                    "publicKeyAlgorithm": {"type": "string", "enum": ["RSA", "DSA", "ECDSA", "Ed25519"]},
                    "signatureAlgorithm": {"type": "string"}})),
                "subject": object(&[], json!({
                    "locale": object(&[], json!({"country": strings(), "locality": strings(),
                        "postalCode": strings(), "province": strings(), "streetAddress": strings()})),
                    "names": object(&[], json!({"commonNamePrefix": {"type": "string"}})),
                    "organization": object(&[], json!({"names": strings(), "units": strings()}))})),
            })),
        }),
    )
}

/// A provider network's: a network's, with its VLAN.
fn provider_network() -> Value {
    let mut properties = network_properties();
    properties["providerNetType"] = json!({"type": "string"});
    properties["vlan"] = object(
        &["providerInterfaceName", "vlanNodeSelector"],
        json!({"vlanID": {"type": "string"},
               "providerInterfaceName": {"type": "string"},
               "logicalInterfaceName": {"type": "string"},
               "vlanNodeSelector": {"type": "string"},
               "nodeLabelList": strings()}),
    );
    object(&["cniType", "providerNetType", "vlan"], properties)
}

/// A tenancy policy's: what a project's deployments may put on the clusters.
fn tenancy_policy() -> Value {
    object(
        &[],
        json!({
            "namespaces": {"type": "array", "items": {"type": "string",
                "pattern": "^(\\*|[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?|[a-z0-9][a-z0-9-]{0,61}\\*)$"}},
            "kinds": {"type": "array", "items": {"type": "string",
                "pattern": "^(\\*|([A-Za-z0-9.-]+/)?[A-Za-z0-9]+)$"}},
            "clusterRoles": {"type": "array", "items": {"type": "string", "minLength": 1,
                "maxLength": 253, "pattern": PRINTABLE}},
            "clusterWidePermissions": {"type": "boolean"},
            "clusterCredentials": {"type": "boolean"},
            "podSecurity": or_null(json!({"type": "string", "enum": ["restricted", "baseline", "privileged", null]})),
        }),
    )
}
