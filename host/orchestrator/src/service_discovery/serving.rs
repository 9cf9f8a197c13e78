//! Where a server app serves its Service, as only its clusters know: once
//! every resource of the app is ready there, a NodePort's node ports on
//! the cluster's first node's address, or a LoadBalancer's ports on its
//! ingress address.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use wasmco_core::ClusterRef;
use wasmco_store::appcontext::{
    Readiness, ResourceStatus, ServiceMirror, StoredContext, SyncEngine,
};

use super::wanted::text;

/// One port of the server's Service, and where a server cluster serves it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ServedPort {
    /// The Service's port, which clients are told.
    pub(super) port: u64,
    pub(super) protocol: String,
    /// Where it is reached on the cluster's address: the node port of a
    /// NodePort Service, the port of a LoadBalancer's.
    pub(super) reached_on: u64,
}

/// Where one server cluster serves the Service.
#[derive(Debug)]
pub(super) struct Served {
    pub(super) address: String,
    pub(super) ports: Vec<ServedPort>,
}

/// What one pass found of one service.
pub(super) enum Found<T> {
    /// What was looked for.
    Here(T),
    /// Not now (the server is not ready, its cluster does not answer, its
    /// load balancer has no address yet): its clients keep what they have.
    Waiting(String),
    /// It cannot be reached from other clusters, and why.
    Refused(String),
}

impl<T> Found<T> {
    pub(super) fn and_then<U>(self, next: impl FnOnce(T) -> Found<U>) -> Found<U> {
        match self {
            Found::Here(found) => next(found),
            Found::Waiting(why) => Found::Waiting(why),
            Found::Refused(why) => Found::Refused(why),
        }
    }
}

/// Whether and where `wanted`'s server serves its Service, on every
/// cluster of the server app.
pub(super) fn served(
    sync: &dyn SyncEngine,
    context: &StoredContext,
    statuses: &BTreeMap<(String, ClusterRef, String), ResourceStatus>,
    wanted: &ServiceMirror,
) -> Found<Vec<Served>> {
    let Some(server) = context.apps.iter().find(|a| a.name == wanted.server_app) else {
        return Found::Refused(format!(
            "server app {} is not part of this deployment",
            wanted.server_app
        ));
    };
    let mut served = Vec::new();
    for placement in &server.placement {
        let cluster = &placement.cluster;
        let resources = server.resources_on(cluster);
        let Some(service) = resources.iter().find(|r| {
            r.key.kind == "Service" && r.api_version == "v1" && r.key.name == wanted.service
        }) else {
            return Found::Refused(format!(
                "server app {} puts no Service {} on cluster {cluster}",
                server.name, wanted.service
            ));
        };
        let not_ready = resources.iter().find(|r| {
            statuses
                .get(&(server.name.clone(), cluster.clone(), r.key.to_string()))
                .is_none_or(|s| s.ready != Readiness::Ready)
        });
        if let Some(resource) = not_ready {
            return Found::Waiting(format!(
                "waiting for server app {} to be ready on cluster {cluster} ({} {} is not)",
                server.name, resource.key.kind, resource.key.name
            ));
        }
        let namespace = service
            .namespace
            .clone()
            .unwrap_or_else(|| context.meta.access.namespace().to_owned());
        match serving(sync, cluster, &wanted.service, &namespace) {
            Found::Here(one) => served.push(one),
            Found::Waiting(why) => return Found::Waiting(why),
            Found::Refused(why) => return Found::Refused(why),
        }
    }
    if served.is_empty() {
        return Found::Waiting(format!("server app {} is placed nowhere", server.name));
    }
    Found::Here(served)
}

/// Where `cluster` serves its Service `name`: a NodePort on its first
/// node's first IP address (as EMCO takes it), a LoadBalancer on its
/// ingress address.
fn serving(
    sync: &dyn SyncEngine,
    cluster: &ClusterRef,
    name: &str,
    namespace: &str,
) -> Found<Served> {
    let asked = json!({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": name, "namespace": namespace}});
    let service = match sync.object(cluster, &asked) {
        Ok(Some(service)) => service,
        Ok(None) => {
            return Found::Waiting(format!(
                "cluster {cluster} has no Service {namespace}/{name} (yet)"
            ));
        }
        Err(error) => {
            return Found::Waiting(format!(
                "Service {name} on cluster {cluster} cannot be read: {error}"
            ));
        }
    };
    let service_type = service["spec"]["type"].as_str().unwrap_or("ClusterIP");
    let node_port = service_type == "NodePort";
    address(sync, cluster, name, &service, service_type).and_then(|address| {
        ports(cluster, name, &service, node_port)
            .and_then(|ports| Found::Here(Served { address, ports }))
    })
}

/// The address other clusters reach `service` (of type `service_type`) on.
fn address(
    sync: &dyn SyncEngine,
    cluster: &ClusterRef,
    name: &str,
    service: &Value,
    service_type: &str,
) -> Found<String> {
    match service_type {
        "NodePort" => match sync.node_addresses(cluster) {
            Ok(addresses) => match addresses.into_iter().next() {
                Some(address) => Found::Here(address),
                None => Found::Waiting(format!("no node of cluster {cluster} has an IP address")),
            },
            Err(error) => Found::Waiting(format!(
                "the nodes of cluster {cluster} cannot be read: {error}"
            )),
        },
        "LoadBalancer" => {
            let ingress = service["status"]["loadBalancer"]["ingress"].as_array();
            let ingress: Vec<&Value> = ingress.into_iter().flatten().collect();
            match ingress.iter().filter_map(|i| text(&i["ip"])).next() {
                Some(ip) => Found::Here(ip.to_owned()),
                None if ingress.iter().any(|i| text(&i["hostname"]).is_some()) => {
                    Found::Refused(format!(
                        "the load balancer of Service {name} on cluster {cluster} has a \
                         host name only; Endpoints take IP addresses"
                    ))
                }
                None => Found::Waiting(format!(
                    "waiting for the load balancer of Service {name} on cluster \
                     {cluster} to get an address"
                )),
            }
        }
        other => Found::Refused(format!(
            "Service {name} on cluster {cluster} is of type {other}; only a NodePort \
             or LoadBalancer Service can be reached from other clusters"
        )),
    }
}

/// The Service's ports, each with where it is reached: its node port for
/// a NodePort Service, else itself.
fn ports(
    cluster: &ClusterRef,
    name: &str,
    service: &Value,
    node_port: bool,
) -> Found<Vec<ServedPort>> {
    let mut ports = Vec::new();
    for port in service["spec"]["ports"].as_array().into_iter().flatten() {
        let Some(number) = port["port"].as_u64() else {
            return Found::Refused(format!("Service {name} has a port without a number"));
        };
        let reached_on = match node_port {
            true => match port["nodePort"].as_u64() {
                Some(node_port) => node_port,
                None => {
                    return Found::Waiting(format!(
                        "Service {name} on cluster {cluster} has no node port for {number} yet"
                    ));
                }
            },
            false => number,
        };
        ports.push(ServedPort {
            port: number,
            protocol: port["protocol"].as_str().unwrap_or("TCP").to_owned(),
            reached_on,
        });
    }
    if ports.is_empty() {
        return Found::Refused(format!("Service {name} on cluster {cluster} has no ports"));
    }
    Found::Here(ports)
}
