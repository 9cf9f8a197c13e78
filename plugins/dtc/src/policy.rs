//! The NetworkPolicy object nps adds, in the shape EMCO's nps writes.

use std::collections::BTreeMap;

use serde::Serialize;

/// A `networking.k8s.io/v1` NetworkPolicy admitting ingress to one server.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicy {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata,
    spec: PolicySpec,
}

#[derive(Debug, Serialize)]
struct Metadata {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PolicySpec {
    pod_selector: Selector,
    policy_types: [&'static str; 1],
    ingress: [IngressRule; 1],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Selector {
    match_labels: BTreeMap<String, String>,
}

impl Selector {
    fn one(key: &str, value: &str) -> Self {
        Selector {
            match_labels: BTreeMap::from([(key.to_owned(), value.to_owned())]),
        }
    }
}

#[derive(Debug, Serialize)]
struct IngressRule {
    /// Left out when empty, as EMCO does; Kubernetes then admits every
    /// source.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    from: Vec<Peer>,
    ports: [PortEntry; 2],
}

/// One `from` entry.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Peer {
    /// Pods of the policy's namespace carrying a label.
    Pods(PodPeer),
    /// Sources in a network.
    Network(NetworkPeer),
}

/// `{podSelector: {matchLabels: {key: value}}}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodPeer {
    pod_selector: Selector,
}

/// `{ipBlock: {cidr}}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPeer {
    ip_block: IpBlock,
}

#[derive(Debug, Serialize)]
struct IpBlock {
    cidr: String,
}

impl Peer {
    /// Pods labelled `key=value`.
    pub fn pods(key: &str, value: &str) -> Self {
        Peer::Pods(PodPeer {
            pod_selector: Selector::one(key, value),
        })
    }

    /// Sources in `cidr`.
    pub fn network(cidr: &str) -> Self {
        Peer::Network(NetworkPeer {
            ip_block: IpBlock {
                cidr: cidr.to_owned(),
            },
        })
    }
}

/// EMCO lists the protocol and the port as two entries of `ports`, not as
/// one `{protocol, port}`; see [`NetworkPolicy::new`].
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum PortEntry {
    Protocol { protocol: String },
    Port { port: u16 },
}

impl NetworkPolicy {
    /// The policy `name` admitting `from` to the pods labelled
    /// `server_label` on `protocol` and `port`.
    ///
    /// The ports are written as EMCO's nps writes them, `[{protocol},
    /// {port}]`. Kubernetes ORs the entries, so the rule admits every port
    /// of `protocol` and `port` on TCP; we keep the shape so that a
    /// deployment moved from EMCO gets the same policy.
    pub fn new(
        name: String,
        namespace: Option<String>,
        server_label: (&str, &str),
        from: Vec<Peer>,
        protocol: &str,
        port: u16,
    ) -> Self {
        NetworkPolicy {
            api_version: "networking.k8s.io/v1",
            kind: "NetworkPolicy",
            metadata: Metadata { name, namespace },
            spec: PolicySpec {
                pod_selector: Selector::one(server_label.0, server_label.1),
                policy_types: ["Ingress"],
                ingress: [IngressRule {
                    from,
                    ports: [
                        PortEntry::Protocol {
                            protocol: protocol.to_owned(),
                        },
                        PortEntry::Port { port },
                    ],
                }],
            },
        }
    }
}
