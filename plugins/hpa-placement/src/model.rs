//! EMCO's hpa intent kinds as both hpa controllers read them.
//!
//! hpa-placement declares the kinds (see `intents.json`); hpa-action reads
//! the same stored intents and includes this file, so the two controllers
//! agree on what an intent means.
//!
//! Like EMCO's hpa-plc and hpa-ac, both controllers act on every hpa intent
//! of the deployment intent group (`IntentTree::all`), whatever name the
//! group's `intents` document gives them.
//!
//! Units follow EMCO: cpu in whole cores, memory in MB (10^6 bytes), any
//! other resource (`nvidia.com/gpu`, `qat.intel.com/generic`, …) a count.

use serde_json::Value;
use wasmco_guest::intents::{IntentNode, IntentTree};

/// Collection segment of the consumers under an hpa intent.
pub const CONSUMERS: &str = "hpa-resource-consumers";
/// Collection segment of the requirements under a consumer.
pub const REQUIREMENTS: &str = "resource-requirements";

/// Bytes in one of EMCO's memory units (MB).
const BYTES_PER_MEMORY_UNIT: i64 = 1_000_000;

/// One hpa intent: the workloads of an app that need hardware features.
#[derive(Debug, Clone)]
pub struct HpaIntent {
    /// `metadata.name`.
    pub name: String,
    /// The app it constrains (`spec.app`).
    pub app: String,
    /// Its consumers, in stored order.
    pub consumers: Vec<Consumer>,
}

/// A workload of the app (EMCO's hpa-resource-consumer).
#[derive(Debug, Clone)]
pub struct Consumer {
    /// `metadata.name`.
    pub name: String,
    /// `spec.name`: the Deployment's `metadata.name` as rendered.
    pub workload: String,
    /// `spec.replicas`, when given.
    pub replicas: Option<i64>,
    /// `spec.container`: the container allocatable resources go to.
    pub container: Option<String>,
    /// Its requirements, in stored order.
    pub requirements: Vec<Requirement>,
}

impl Consumer {
    /// How many pods placement must find room for: `replicas`, at least one.
    pub fn pods(&self) -> i64 {
        self.replicas.filter(|&n| n > 0).unwrap_or(1)
    }

    /// The node labels every pod needs.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.requirements.iter().filter_map(|r| match &r.need {
            Need::Label { key, value } => Some((key.as_str(), value.as_str())),
            Need::Allocatable(_) => None,
        })
    }

    /// The allocatable amounts every pod needs.
    pub fn allocatable(&self) -> impl Iterator<Item = &Allocatable> {
        self.requirements.iter().filter_map(|r| match &r.need {
            Need::Allocatable(amounts) => Some(amounts),
            Need::Label { .. } => None,
        })
    }
}

/// One resource requirement of a consumer.
#[derive(Debug, Clone)]
pub struct Requirement {
    /// `metadata.name`.
    pub name: String,
    /// What it asks for.
    pub need: Need,
}

/// What a requirement asks for.
#[derive(Debug, Clone)]
pub enum Need {
    /// A node label (`allocatable: false`; NFD style, e.g.
    /// `feature.node.kubernetes.io/intel_qat=true`).
    Label {
        /// Label key.
        key: String,
        /// Label value.
        value: String,
    },
    /// An amount of a countable resource (`allocatable: true`).
    Allocatable(Allocatable),
}

/// An allocatable requirement, already in Kubernetes units (cores, bytes,
/// devices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocatable {
    /// The resource name (`cpu`, `memory`, `nvidia.com/gpu`, …).
    pub resource: String,
    /// What each pod requests.
    pub requests: i64,
    /// Each pod's limit; 0 when none is set.
    pub limits: i64,
}

impl Allocatable {
    /// What one pod takes from a node: its request, or its limit when it
    /// requests nothing (a pod with only a limit is given it as request).
    pub fn per_pod(&self) -> i64 {
        if self.requests > 0 {
            self.requests
        } else {
            self.limits
        }
    }
}

/// Reads and checks every hpa intent of the deployment intent group.
///
/// The host has validated each spec against its schema; the checks here
/// are those EMCO makes across fields and kinds when an intent is stored
/// (a schema cannot express them): an allocatable requirement needs its
/// consumer's `container`, and requests may not exceed limits.
pub fn read_intents(tree: &IntentTree) -> Result<Vec<HpaIntent>, String> {
    tree.all.iter().map(read_intent).collect()
}

fn read_intent(node: &IntentNode) -> Result<HpaIntent, String> {
    let name = node.name().to_owned();
    let app = text(&node.spec, "app")
        .filter(|app| !app.is_empty())
        .ok_or_else(|| format!("hpa-intent {name}: spec.app is missing"))?;
    let consumers = node
        .children(CONSUMERS)
        .iter()
        .map(|consumer| read_consumer(consumer).map_err(|e| format!("hpa-intent {name}, {e}")))
        .collect::<Result<_, _>>()?;
    Ok(HpaIntent {
        name,
        app: app.to_owned(),
        consumers,
    })
}

fn read_consumer(node: &IntentNode) -> Result<Consumer, String> {
    let name = node.name().to_owned();
    let workload = text(&node.spec, "name")
        .filter(|workload| !workload.is_empty())
        .ok_or_else(|| format!("hpa-resource-consumer {name}: spec.name is missing"))?;
    let replicas = match node.spec.get("replicas") {
        None | Some(Value::Null) => None,
        Some(value) => Some(integer(value).ok_or_else(|| {
            format!("hpa-resource-consumer {name}: spec.replicas {value} is not an integer")
        })?),
    };
    let container = text(&node.spec, "container")
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let requirements: Vec<Requirement> = node
        .children(REQUIREMENTS)
        .iter()
        .map(read_requirement)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("hpa-resource-consumer {name}, {e}"))?;
    if container.is_none()
        && let Some(first) = requirements
            .iter()
            .find(|r| matches!(r.need, Need::Allocatable(_)))
    {
        return Err(format!(
            "hpa-resource-consumer {name}: spec.container is missing, and allocatable \
             resource-requirement {} needs it",
            first.name
        ));
    }
    Ok(Consumer {
        name,
        workload: workload.to_owned(),
        replicas,
        container,
        requirements,
    })
}

fn read_requirement(node: &IntentNode) -> Result<Requirement, String> {
    let name = node.name().to_owned();
    let fail = |reason: String| format!("resource-requirement {name}: {reason}");
    let allocatable = match node.spec.get("allocatable") {
        Some(Value::Bool(flag)) => *flag,
        Some(Value::String(flag)) if flag == "true" => true,
        Some(Value::String(flag)) if flag == "false" => false,
        Some(other) => return Err(fail(format!("spec.allocatable {other} is not a boolean"))),
        None => return Err(fail("spec.allocatable is missing".into())),
    };
    let resource = node
        .spec
        .get("resource")
        .filter(|r| r.is_object())
        .ok_or_else(|| fail("spec.resource is missing".into()))?;
    let need = if allocatable {
        let resource_name = text(resource, "name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| fail("spec.resource.name is missing".into()))?;
        let amount = |field: &str| -> Result<i64, String> {
            let Some(value) = resource.get(field).filter(|v| !v.is_null()) else {
                return Ok(0);
            };
            let count = integer(value)
                .filter(|&n| n >= 0)
                .ok_or_else(|| fail(format!("spec.resource.{field} {value} is not a count")))?;
            to_kubernetes_units(resource_name, count)
                .ok_or_else(|| fail(format!("spec.resource.{field} {count} is too large")))
        };
        let (requests, limits) = (amount("requests")?, amount("limits")?);
        if requests == 0 && limits == 0 {
            return Err(fail(format!(
                "spec.resource asks for no {resource_name} (requests and limits are unset)"
            )));
        }
        if limits > 0 && requests > limits {
            return Err(fail(format!(
                "spec.resource requests must be less or equal to limits for {resource_name}"
            )));
        }
        Need::Allocatable(Allocatable {
            resource: resource_name.to_owned(),
            requests,
            limits,
        })
    } else {
        let key = text(resource, "key")
            .filter(|k| !k.is_empty())
            .ok_or_else(|| fail("spec.resource.key is missing".into()))?;
        let value =
            text(resource, "value").ok_or_else(|| fail("spec.resource.value is missing".into()))?;
        Need::Label {
            key: key.to_owned(),
            value: value.to_owned(),
        }
    };
    Ok(Requirement { name, need })
}

/// `count` of EMCO's unit for `resource` in Kubernetes units: memory comes
/// in MB and becomes bytes; cpu (whole cores) and devices stay as they are.
fn to_kubernetes_units(resource: &str, count: i64) -> Option<i64> {
    if resource == "memory" {
        count.checked_mul(BYTES_PER_MEMORY_UNIT)
    } else {
        Some(count)
    }
}

fn text<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get(field)?.as_str()
}

/// An integer, also when a YAML-minded client sent it as a string.
fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}
