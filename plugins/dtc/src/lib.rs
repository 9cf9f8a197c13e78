//! dtc, EMCO's distributed traffic controller, as a wasmco action controller.
//!
//! It serves EMCO's dtc intents under a deployment intent group (see
//! `intents.json`): a traffic group intent holds inbound intents (a server
//! app, its pod label and port), each of which holds inbound clients
//! intents (a client app, its pod label and networks). The deployment
//! intent group's `intents` document names the traffic group this
//! controller acts on (`dtc: testdtc`).
//!
//! EMCO's dtc fans the call out to sub-controllers. This component does the
//! work of one of them, nps: for every inbound intent of the traffic group
//! that has clients, it adds a NetworkPolicy `<traffic group>-<inbound
//! intent>` to the server app, on those of the app's clusters that carry
//! the cluster label `networkpolicy-supported`. The policy selects the
//! server's pods by its `appLabel` and admits each client's pods (by the
//! client's `appLabel`), plus, when the server has `externalSupport`, each
//! client's cidrs, and otherwise any source (`0.0.0.0/0`), on the server's
//! protocol and port. It goes into the logical cloud's namespace when the
//! deployment has one.
//!
//! Not here:
//! - sds (service discovery) copies the server's Service to the clients'
//!   clusters with the server's node or load-balancer address, so it needs
//!   facts that exist only once the server is deployed: the host does it
//!   after the deploy, from the same intents (`wasmco_orchestrator::
//!   service_discovery`).
//! - its (istio) and swc (sdewan) are not implemented; the fields only they
//!   read (`serviceMesh`, `management`, `external`, `edgeCNF`) are stored
//!   and ignored.
//!
//! Errors: EMCO's dtc logs a sub-controller's error and lets the
//! deployment go on, so a bad intent silently yields no policy. Here an
//! intent nps cannot turn into a policy (a pod label that is not
//! `key=value`, a server app that is not placed) fails the call with a
//! message naming the intent. A traffic group without inbound intents, or
//! an inbound intent without clients, adds nothing, which is what an EMCO
//! deployment ends up with.

mod intent;
mod policy;

/// Bindings generated from `wit/` (the guest side of the contract).
#[allow(unsafe_code, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "action-controller",
        path: "../../wit",
        pub_export_macro: true,
    });
}

pub use bindings::exports::wasmco::controller::action::{
    ActionEdit, ActionRequest, AddResource, ClusterScope,
};
pub use bindings::wasmco::controller::types::{ClusterTable, ControllerError, Strings};
use wasmco_guest::intents::{IntentNode, IntentTree};
use wasmco_guest::{Clusters, StringTable};

use intent::{ClientsSpec, InboundSpec, label};
use policy::{NetworkPolicy, Peer};

wasmco_guest::declare_intents!("../intents.json");

/// The cluster label that marks a cluster whose network enforces
/// NetworkPolicy objects; EMCO's nps adds policies only there.
pub const NETWORK_POLICY_LABEL: &str = "networkpolicy-supported";

/// The collection segments of the child kinds, as `intents.json` declares them.
const INBOUND_INTENTS: &str = "inbound-intents";
const CLIENTS: &str = "clients";

/// Adds the network policies of the traffic group the deployment names.
pub fn act(request: &ActionRequest) -> Result<Vec<ActionEdit>, ControllerError> {
    let tree = IntentTree::parse_named(&request.intent)
        .map_err(|e| error(format!("the dtc intent tree is not valid: {e}")))?;
    let group = tree
        .intents
        .iter()
        .find(|node| node.name() == tree.name)
        .ok_or_else(|| {
            error(format!(
                "traffic group intent {:?} not found in deployment intent group {:?}",
                tree.name, tree.deployment_intent_group.name
            ))
        })?;
    let namespace = Some(tree.deployment_intent_group.namespace.clone()).filter(|n| !n.is_empty());
    let supporting = SupportingClusters::of(request);
    let mut edits = Vec::new();
    for inbound in group.children(INBOUND_INTENTS) {
        let edit = network_policy(&supporting, group.name(), inbound, namespace.as_deref())?;
        if let Some(edit) = edit {
            edits.push(edit);
        }
    }
    Ok(edits)
}

/// The edit adding `inbound`'s policy; `None` when it has no clients or
/// none of its server's clusters supports network policies.
fn network_policy(
    supporting: &SupportingClusters<'_>,
    group: &str,
    inbound: &IntentNode,
    namespace: Option<&str>,
) -> Result<Option<ActionEdit>, ControllerError> {
    let inbound_error = |reason: String| {
        error(format!(
            "inbound intent {:?} of traffic group intent {group:?}: {reason}",
            inbound.name()
        ))
    };
    let server: InboundSpec = serde::Deserialize::deserialize(&inbound.spec)
        .map_err(|e| inbound_error(format!("spec is not valid: {e}")))?;
    let server_label = label(&server.app_label).ok_or_else(|| {
        inbound_error(format!(
            "appLabel {:?} is not of the form key=value",
            server.app_label
        ))
    })?;
    let clients = inbound.children(CLIENTS);
    let mut from = Vec::new();
    for client in clients {
        let client_error = |reason: String| {
            error(format!(
                "inbound clients intent {:?} of inbound intent {:?} of traffic group intent {group:?}: {reason}",
                client.name(),
                inbound.name()
            ))
        };
        let spec: ClientsSpec = serde::Deserialize::deserialize(&client.spec)
            .map_err(|e| client_error(format!("spec is not valid: {e}")))?;
        if !spec.app_label.is_empty() {
            let (key, value) = label(&spec.app_label).ok_or_else(|| {
                client_error(format!(
                    "appLabel {:?} is not of the form key=value",
                    spec.app_label
                ))
            })?;
            from.push(Peer::pods(key, value));
        }
        if server.external_support {
            from.extend(spec.cidrs.iter().map(|cidr| Peer::network(cidr)));
        }
    }
    if clients.is_empty() {
        return Ok(None);
    }
    if !server.external_support {
        from.push(Peer::network("0.0.0.0/0"));
    }
    let Some(scope) = supporting.of_app(&server.app).map_err(inbound_error)? else {
        return Ok(None);
    };
    let name = format!("{group}-{}", inbound.name());
    let policy = NetworkPolicy::new(
        name,
        namespace.map(str::to_owned),
        server_label,
        from,
        &server.protocol,
        server.port,
    );
    let manifest = serde_json::to_string(&policy)
        .map_err(|e| inbound_error(format!("cannot write the network policy: {e}")))?;
    Ok(Some(ActionEdit::Add(AddResource {
        app: server.app,
        scope,
        manifest,
    })))
}

/// Which clusters of the request carry [`NETWORK_POLICY_LABEL`], looked
/// up once for every inbound intent.
struct SupportingClusters<'r> {
    request: &'r ActionRequest,
    strings: StringTable<'r>,
    /// Per cluster index.
    supporting: Vec<bool>,
}

impl<'r> SupportingClusters<'r> {
    fn of(request: &'r ActionRequest) -> Self {
        let strings = StringTable::new(&request.strings.data, &request.strings.ends);
        let clusters: Clusters<'_> = wasmco_guest::clusters!(request.clusters);
        let supporting = match strings.find(NETWORK_POLICY_LABEL) {
            Some(label) => (0..clusters.len() as u32)
                .map(|cluster| clusters.labels(cluster).contains(&label))
                .collect(),
            None => vec![false; clusters.len()],
        };
        SupportingClusters {
            request,
            strings,
            supporting,
        }
    }

    /// The clusters of `app` that support network policies: `All` when
    /// every cluster it is placed on does, `None` when none does.
    fn of_app(&self, app: &str) -> Result<Option<ClusterScope>, String> {
        let placement = self
            .strings
            .find(app)
            .and_then(|id| self.request.placements.iter().find(|p| p.app == id))
            .ok_or_else(|| format!("server app {app:?} is not placed in this deployment"))?;
        let supports = |cluster: u32| self.supporting.get(cluster as usize) == Some(&true);
        let count = placement
            .clusters
            .iter()
            .filter(|&&cluster| supports(cluster))
            .count();
        Ok(if count == 0 {
            None
        } else if count == placement.clusters.len() {
            Some(ClusterScope::All)
        } else {
            Some(ClusterScope::Only(
                placement
                    .clusters
                    .iter()
                    .copied()
                    .filter(|&cluster| supports(cluster))
                    .collect(),
            ))
        })
    }
}

fn error(message: String) -> ControllerError {
    ControllerError { message }
}

/// The component's exports; `export!` expands to the ABI glue, hence unsafe.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    struct Dtc;

    impl super::bindings::exports::wasmco::controller::action::Guest for Dtc {
        fn act(
            request: super::ActionRequest,
        ) -> Result<Vec<super::ActionEdit>, super::ControllerError> {
            super::act(&request)
        }
    }

    super::bindings::export!(Dtc with_types_in super::bindings);
}

#[cfg(test)]
mod tests;
