//! A network chain as its intents describe it, and the NetworkChaining
//! that Nodus reads.
//!
//! The host has checked each spec against `intents.json`; what a schema
//! cannot say (links that form one chain, both ends given) is checked here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Value, json};
use wasmco_guest::intents::IntentNode;

/// Nodus' API group and version.
const NODUS_API_VERSION: &str = "k8s.plugin.opnfv.org/v1alpha1";

/// A chain's own spec.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChainSpec {
    #[serde(default)]
    chain_type: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

/// One function of the chain.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    #[serde(skip)]
    pub name: String,
    pub left_net: String,
    pub right_net: String,
    pub link_label: String,
    pub app: String,
    pub workload_resource: String,
    pub resource_type: String,
}

impl Link {
    /// `linkLabel` split as `key=value`.
    pub fn label(&self) -> Option<(&str, &str)> {
        let (key, value) = self.link_label.split_once('=')?;
        (!key.is_empty() && !value.is_empty() && !value.contains('=')).then_some((key, value))
    }
}

/// Which end of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum End {
    Left,
    Right,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClientSelector {
    chain_end: End,
    #[serde(default)]
    pod_selector: Option<Value>,
    #[serde(default)]
    namespace_selector: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderNetwork {
    chain_end: End,
    provider_network: String,
    gateway_ip: String,
    #[serde(default)]
    subnet: String,
}

/// A chain, read and checked.
#[derive(Debug)]
pub struct Chain {
    pub name: String,
    chain_type: String,
    namespace: String,
    /// In chain order, from the head.
    pub links: Vec<Link>,
    network_chain: String,
    left: Vec<Value>,
    right: Vec<Value>,
}

impl Chain {
    /// Reads the chain `node` and its children.
    pub fn read(node: &IntentNode) -> Result<Chain, String> {
        let spec: ChainSpec = serde::Deserialize::deserialize(&node.spec)
            .map_err(|e| format!("spec is not valid: {e}"))?;
        let mut links = Vec::new();
        for child in node.children("links") {
            let mut link: Link = serde::Deserialize::deserialize(&child.spec)
                .map_err(|e| format!("link {:?}: spec is not valid: {e}", child.name()))?;
            link.name = child.name().to_owned();
            links.push(link);
        }
        let (links, network_chain) = walk(links)?;
        let mut ends: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        for (end, name) in [(End::Left, "left"), (End::Right, "right")] {
            let networks = routing_networks(node, end)?;
            if networks.is_empty() {
                return Err(format!(
                    "provider network or client selector intents were not provided for the \
                     {name} end of the chain"
                ));
            }
            ends.insert(name, networks);
        }
        Ok(Chain {
            name: node.name().to_owned(),
            chain_type: spec.chain_type.unwrap_or_else(|| "Routing".to_owned()),
            namespace: spec.namespace.unwrap_or_default(),
            links,
            network_chain,
            left: ends.remove("left").unwrap_or_default(),
            right: ends.remove("right").unwrap_or_default(),
        })
    }

    /// The app of the chain's first function.
    pub fn head_app(&self) -> &str {
        self.links.first().map_or("", |l| l.app.as_str())
    }

    /// The NetworkChaining, as Nodus' type writes it.
    pub fn manifest(&self) -> Value {
        json!({
            "apiVersion": NODUS_API_VERSION,
            "kind": "NetworkChaining",
            "metadata": {"name": self.name},
            "spec": {
                "chainType": self.chain_type,
                "routingSpec": {
                    "namespace": self.namespace,
                    "networkChain": self.network_chain,
                    "left": self.left,
                    "right": self.right,
                },
            },
        })
    }
}

/// The links in chain order and the chain they spell, from the one network
/// no link leads to; every link must be on that one path.
fn walk(links: Vec<Link>) -> Result<(Vec<Link>, String), String> {
    if links.is_empty() {
        return Err("it has no links".to_owned());
    }
    let mut from: BTreeMap<&str, usize> = BTreeMap::new();
    let mut into: BTreeSet<&str> = BTreeSet::new();
    let mut labels: BTreeSet<&str> = BTreeSet::new();
    for (i, link) in links.iter().enumerate() {
        if from.insert(&link.left_net, i).is_some() {
            return Err(format!("two links start at network {:?}", link.left_net));
        }
        if !into.insert(&link.right_net) {
            return Err(format!("two links end at network {:?}", link.right_net));
        }
        if !labels.insert(&link.link_label) {
            return Err(format!("two links have the label {:?}", link.link_label));
        }
    }
    let heads: Vec<&str> = from
        .keys()
        .copied()
        .filter(|net| !into.contains(net))
        .collect();
    let head = match heads.as_slice() {
        [one] => *one,
        [] => return Err("its links form a loop: no network starts the chain".to_owned()),
        several => {
            return Err(format!(
                "several networks start the chain: {}",
                several.join(", ")
            ));
        }
    };
    let mut order = Vec::with_capacity(links.len());
    let mut chain = format!("net={head}");
    let mut at = head;
    while let Some(&i) = from.get(at) {
        if order.contains(&i) {
            break;
        }
        order.push(i);
        let link = &links[i];
        chain.push_str(&format!(",{},net={}", link.link_label, link.right_net));
        at = &link.right_net;
    }
    if order.len() != links.len() {
        return Err(format!(
            "its links are not one chain: from {head} they reach {} of {}",
            order.len(),
            links.len()
        ));
    }
    let mut slots: Vec<Option<Link>> = links.into_iter().map(Some).collect();
    let ordered = order.into_iter().filter_map(|i| slots[i].take()).collect();
    Ok((ordered, chain))
}

/// One end's networks: a selector per client selector, then its provider
/// networks filling in the first ones' network, gateway and subnet in
/// order, the extra ones after.
fn routing_networks(node: &IntentNode, end: End) -> Result<Vec<Value>, String> {
    let mut networks = Vec::new();
    for child in node.children("client-selectors") {
        let selector: ClientSelector = serde::Deserialize::deserialize(&child.spec)
            .map_err(|e| format!("client selector {:?}: {e}", child.name()))?;
        if selector.chain_end == end {
            // Nodus' type writes every field: a selector no provider
            // network fills in has empty ones.
            networks.push(json!({
                "networkName": "",
                "gatewayIp": "",
                "subnet": "",
                "podSelector": selector.pod_selector.unwrap_or_else(|| json!({})),
                "namespaceSelector": selector.namespace_selector.unwrap_or_else(|| json!({})),
            }));
        }
    }
    let mut filled = 0;
    for child in node.children("provider-networks") {
        let network: ProviderNetwork = serde::Deserialize::deserialize(&child.spec)
            .map_err(|e| format!("provider network {:?}: {e}", child.name()))?;
        if network.chain_end != end {
            continue;
        }
        if filled == networks.len() {
            networks.push(json!({"podSelector": {}, "namespaceSelector": {}}));
        }
        let entry = &mut networks[filled];
        entry["networkName"] = json!(network.provider_network);
        entry["gatewayIp"] = json!(network.gateway_ip);
        entry["subnet"] = json!(network.subnet);
        filled += 1;
    }
    Ok(networks)
}
