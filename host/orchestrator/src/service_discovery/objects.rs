//! What a client cluster gets: a Service of the server's name without a
//! selector, and its Endpoints pointing at every server cluster.

use serde_json::{Value, json};

use wasmco_core::resource::Resource;
use wasmco_store::appcontext::ContextMeta;

use super::serving::{Found, Served, ServedPort};

/// The Service without a selector and its Endpoints that point a client
/// cluster at every server cluster (a subset each), on the Service's ports
/// named by their numbers as EMCO names them (with the protocol too where
/// a number has two).
pub(super) fn mirrored(meta: &ContextMeta, name: &str, served: &[Served]) -> Found<Vec<Resource>> {
    let first = &served[0].ports;
    let same = |s: &Served| {
        s.ports.len() == first.len()
            && s.ports
                .iter()
                .zip(first)
                .all(|(a, b)| a.port == b.port && a.protocol == b.protocol)
    };
    if !served.iter().all(same) {
        return Found::Waiting(format!(
            "the server's clusters expose Service {name} on different ports (a rollout?)"
        ));
    }
    let port_name = |port: &ServedPort| {
        let shared = first.iter().filter(|p| p.port == port.port).count() > 1;
        match shared {
            true => format!("{}-{}", port.port, port.protocol.to_lowercase()),
            false => port.port.to_string(),
        }
    };
    let namespace = meta.access.namespace();
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterIP": "None",
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ports": first.iter().map(|p| json!({
                "name": port_name(p), "protocol": p.protocol, "port": p.port,
                "targetPort": p.port,
            })).collect::<Vec<_>>(),
        },
    });
    let subsets: Vec<Value> = served
        .iter()
        .map(|s| {
            json!({
                "addresses": [{"ip": s.address}],
                "ports": s.ports.iter().map(|p| json!({
                    "name": port_name(p), "port": p.reached_on, "protocol": p.protocol,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name, "namespace": namespace},
        "subsets": subsets,
    });
    let made: Result<Vec<Resource>, String> = [endpoints, service]
        .into_iter()
        .map(|manifest| Resource::from_manifest(manifest).map_err(|e| e.to_string()))
        .collect();
    match made {
        Ok(made) => Found::Here(made),
        Err(why) => Found::Refused(format!("Service {name} cannot be mirrored: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use wasmco_store::appcontext as stored;

    use super::*;

    fn meta() -> ContextMeta {
        ContextMeta {
            project: "p".into(),
            composite_app: "ca".into(),
            composite_app_version: "v1".into(),
            deployment_intent_group: "d".into(),
            release: "r1".into(),
            revision: 1,
            created: String::new(),
            app_order: Vec::new(),
            dependencies: BTreeMap::new(),
            access: stored::Access {
                namespace: "ns1".into(),
                cloud_user: None,
            },
            adopt_from: None,
            confinement: None,
            service_mirrors: Vec::new(),
            failover: None,
            rollout: None,
        }
    }

    fn port(port: u64, protocol: &str, reached_on: u64) -> ServedPort {
        ServedPort {
            port,
            protocol: protocol.into(),
            reached_on,
        }
    }

    fn made(found: Found<Vec<Resource>>) -> Vec<Resource> {
        match found {
            Found::Here(made) => made,
            Found::Waiting(why) | Found::Refused(why) => panic!("{why}"),
        }
    }

    #[test]
    fn each_server_cluster_is_a_subset_reached_on_its_node_port() {
        let ports = |node_port| vec![port(30083, "TCP", node_port)];
        let served = [
            Served {
                address: "10.0.0.2".into(),
                ports: ports(30083),
            },
            Served {
                address: "10.0.1.2".into(),
                ports: ports(31000),
            },
        ];
        let made = made(mirrored(&meta(), "http-service", &served));
        let endpoints = &made[0].manifest;
        assert_eq!(endpoints["metadata"]["namespace"], "ns1");
        assert_eq!(
            endpoints["subsets"],
            json!([
                {"addresses": [{"ip": "10.0.0.2"}],
                 "ports": [{"name": "30083", "port": 30083, "protocol": "TCP"}]},
                {"addresses": [{"ip": "10.0.1.2"}],
                 "ports": [{"name": "30083", "port": 31000, "protocol": "TCP"}]},
            ])
        );
        let service = &made[1].manifest;
        assert_eq!(service["spec"]["clusterIP"], "None");
        assert!(service["spec"].get("selector").is_none());
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "30083", "protocol": "TCP", "port": 30083, "targetPort": 30083}])
        );
    }

    #[test]
    fn a_port_number_served_on_two_protocols_gets_two_names() {
        let served = [Served {
            address: "10.0.0.2".into(),
            ports: vec![port(53, "TCP", 53), port(53, "UDP", 53)],
        }];
        let made = made(mirrored(&meta(), "dns", &served));
        let names: Vec<&Value> = made[1].manifest["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["name"])
            .collect();
        assert_eq!(names, [&json!("53-tcp"), &json!("53-udp")]);
    }

    #[test]
    fn servers_exposing_other_ports_are_waited_for() {
        let served = [
            Served {
                address: "10.0.0.2".into(),
                ports: vec![port(80, "TCP", 80)],
            },
            Served {
                address: "10.0.1.2".into(),
                ports: vec![port(81, "TCP", 81)],
            },
        ];
        assert!(matches!(
            mirrored(&meta(), "svc", &served),
            Found::Waiting(why) if why.contains("different ports")
        ));
    }
}
