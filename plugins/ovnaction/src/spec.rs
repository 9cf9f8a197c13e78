//! The specs of the network controller intent's child kinds, as
//! `intents.json` declares them.

use serde::Deserialize;
use wasmco_guest::intents::IntentNode;

use crate::nfn::NfnInterface;

/// The collection segments of the child kinds, as `intents.json` declares them.
pub const WORKLOAD_INTENTS: &str = "workload-intents";
const INTERFACES: &str = "interfaces";

/// A workload intent's spec.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    pub app: String,
    pub workload_resource: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// An interface intent's spec.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InterfaceSpec {
    interface: String,
    name: String,
    #[serde(default)]
    default_gateway: String,
    #[serde(default)]
    ip_address: String,
    #[serde(default)]
    mac_address: String,
}

impl From<InterfaceSpec> for NfnInterface {
    fn from(spec: InterfaceSpec) -> Self {
        NfnInterface {
            interface: spec.interface,
            name: spec.name,
            // EMCO stores an absent gateway as "false".
            default_gateway: if spec.default_gateway.is_empty() {
                "false".to_owned()
            } else {
                spec.default_gateway
            },
            ip_address: spec.ip_address,
            mac_address: spec.mac_address,
        }
    }
}

/// The interfaces of a workload intent, in the tree's order.
pub fn interfaces(workload_intent: &IntentNode) -> Result<Vec<NfnInterface>, String> {
    workload_intent
        .children(INTERFACES)
        .iter()
        .map(|node| {
            serde_json::from_value::<InterfaceSpec>(node.spec.clone())
                .map(NfnInterface::from)
                .map_err(|e| format!("interface intent {:?}: spec is not valid: {e}", node.name()))
        })
        .collect()
}
