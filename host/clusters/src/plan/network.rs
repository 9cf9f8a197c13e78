//! wasmco's own pod network for machines on one network: a bridge per
//! machine with its slice of the pod range (CNI's `bridge` and
//! `host-local`), and a route to every other machine's slice through that
//! machine. Chosen with `network.plugin: bridge`; any other plugin comes as
//! Eggo brings it, a `yaml` package applied after the control plane.

use super::step::{Plan, Step, UNIT_DIR, put};
use crate::topology::Machine;
use crate::units::Unit;

/// The file's plugin name for this network.
pub const BRIDGE_PLUGIN: &str = "bridge";

/// The steps that put `node` on the bridge network, when the file asks for it.
pub fn bridge(plan: &Plan<'_>, node: &Machine) -> Vec<Step> {
    if plan.config.network.plugin != BRIDGE_PLUGIN {
        return Vec::new();
    }
    let Some(subnet) = node.pod_subnet else {
        return Vec::new();
    };
    let conflist = serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "wasmco",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": true,
                "ipMasq": true,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{ "subnet": subnet.to_string() }]],
                    "routes": [{ "dst": "0.0.0.0/0" }],
                },
            },
            { "type": "portmap", "capabilities": { "portMappings": true } },
        ],
    });
    let mut steps = vec![put(
        "/etc/cni/net.d/10-wasmco-bridge.conflist",
        serde_json::to_string_pretty(&conflist).unwrap_or_default(),
        0o644,
    )];
    let routes = pod_routes(plan, node);
    if !routes.is_empty() {
        steps.push(put(
            format!("{UNIT_DIR}/wasmco-pod-routes.service"),
            Unit::oneshot("Routes to the other machines' pods", &routes.join(" && ")),
            0o644,
        ));
        steps.push(Step::start("wasmco-pod-routes", None));
    }
    steps
}

/// `ip route replace` lines from `node` to every other machine's pods.
fn pod_routes(plan: &Plan<'_>, node: &Machine) -> Vec<String> {
    plan.topology
        .machines
        .iter()
        .filter(|other| other.name != node.name)
        .filter_map(|other| {
            other
                .pod_subnet
                .map(|subnet| format!("ip route replace {subnet} via {}", other.ip))
        })
        .collect()
}

/// Takes away the routes to the pods of machines that left the cluster.
pub fn forget_routes(leaving: &[&Machine]) -> Vec<Step> {
    let deletes: Vec<String> = leaving
        .iter()
        .filter_map(|machine| machine.pod_subnet)
        .map(|subnet| format!("ip route del {subnet} 2>/dev/null"))
        .collect();
    if deletes.is_empty() {
        return Vec::new();
    }
    vec![super::step::run(
        "forget the routes to the machines that left",
        format!("{}; true", deletes.join("; ")),
    )]
}
