//! EMCO's network intents (ncm): a cluster's virtual networks and provider
//! networks, as the bodies of `…/clusters/{c}/networks` and
//! `…/clusters/{c}/provider-networks` carry them.

use std::net::Ipv4Addr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::document::{FieldError, check_name};

/// The CNI EMCO's network intents are for.
pub const CNI_OVN4NFV: &str = "ovn4nfv";

/// A virtual network on one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkSpec {
    /// The CNI that makes it: `ovn4nfv`.
    #[schemars(extend("enum" = [CNI_OVN4NFV]))]
    pub cni_type: String,
    /// Its IPv4 subnets.
    #[serde(default)]
    pub ipv4_subnets: Vec<Ipv4Subnet>,
}

/// A network the cluster's nodes reach through a provider interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderNetworkSpec {
    /// The CNI that makes it: `ovn4nfv`.
    #[schemars(extend("enum" = [CNI_OVN4NFV]))]
    pub cni_type: String,
    /// Its IPv4 subnets.
    #[serde(default)]
    pub ipv4_subnets: Vec<Ipv4Subnet>,
    /// `VLAN` or `DIRECT`.
    pub provider_net_type: String,
    /// Where and how it leaves the nodes.
    pub vlan: Vlan,
}

/// One IPv4 subnet of a network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ipv4Subnet {
    /// Its name.
    pub name: String,
    /// CIDR, e.g. `172.16.33.0/24`.
    pub subnet: String,
    /// CIDR of the gateway, e.g. `172.16.33.1/24`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    /// Space-separated addresses and `a..b` ranges not handed out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exclude_ips: String,
}

/// A provider network's VLAN (EMCO spells its id `vlanID` in bodies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vlan {
    /// The VLAN id, as a string.
    #[serde(rename = "vlanID", alias = "vlanId", default)]
    pub vlan_id: String,
    /// The node interface it leaves by.
    pub provider_interface_name: String,
    /// The interface name inside the pods.
    #[serde(default)]
    pub logical_interface_name: String,
    /// `any` node or `specific` ones (by `nodeLabelList`).
    pub vlan_node_selector: String,
    /// The labels of the nodes, for `specific`.
    #[serde(default)]
    pub node_label_list: Vec<String>,
}

impl NetworkSpec {
    /// What EMCO refuses in one.
    pub fn check(&self) -> Result<(), FieldError> {
        check_cni(&self.cni_type)?;
        check_subnets(&self.ipv4_subnets)
    }
}

impl ProviderNetworkSpec {
    /// What EMCO refuses in one.
    pub fn check(&self) -> Result<(), FieldError> {
        check_cni(&self.cni_type)?;
        check_subnets(&self.ipv4_subnets)?;
        match self.provider_net_type.as_str() {
            "VLAN" => {
                let id: Option<u16> = self.vlan.vlan_id.parse().ok();
                if id.is_none_or(|id| id > 4094) {
                    return Err(FieldError::new(
                        "spec.vlan.vlanID",
                        "must be a VLAN id from 0 to 4094, as a string",
                    ));
                }
            }
            "DIRECT" => {}
            _ => {
                return Err(FieldError::new(
                    "spec.providerNetType",
                    "must be VLAN or DIRECT",
                ));
            }
        }
        if self.vlan.provider_interface_name.is_empty() {
            return Err(FieldError::new(
                "spec.vlan.providerInterfaceName",
                "names the node interface the network leaves by; it is required",
            ));
        }
        match self.vlan.vlan_node_selector.as_str() {
            "any" => Ok(()),
            "specific" if !self.vlan.node_label_list.is_empty() => Ok(()),
            "specific" => Err(FieldError::new(
                "spec.vlan.nodeLabelList",
                "vlanNodeSelector specific needs the nodes' labels",
            )),
            _ => Err(FieldError::new(
                "spec.vlan.vlanNodeSelector",
                "must be any or specific",
            )),
        }
    }
}

fn check_cni(cni: &str) -> Result<(), FieldError> {
    if cni == CNI_OVN4NFV {
        Ok(())
    } else {
        Err(FieldError::new(
            "spec.cniType",
            format!("{cni:?} is not a CNI network intents are made for; use {CNI_OVN4NFV:?}"),
        ))
    }
}

fn check_subnets(subnets: &[Ipv4Subnet]) -> Result<(), FieldError> {
    for (i, subnet) in subnets.iter().enumerate() {
        let field = |name: &str| format!("spec.ipv4Subnets[{i}].{name}");
        check_name(&field("name"), &subnet.name)?;
        if !is_ipv4_cidr(&subnet.subnet) {
            return Err(FieldError::new(
                field("subnet"),
                format!(
                    "{:?} is not an IPv4 CIDR such as 172.16.33.0/24",
                    subnet.subnet
                ),
            ));
        }
        if !subnet.gateway.is_empty() && !is_ipv4_cidr(&subnet.gateway) {
            return Err(FieldError::new(
                field("gateway"),
                format!(
                    "{:?} is not an IPv4 CIDR such as 172.16.33.1/24",
                    subnet.gateway
                ),
            ));
        }
        let excluded = subnet
            .exclude_ips
            .split_whitespace()
            .flat_map(|entry| entry.splitn(2, ".."));
        for address in excluded {
            if address.parse::<Ipv4Addr>().is_err() {
                return Err(FieldError::new(
                    field("excludeIps"),
                    format!(
                        "{address:?} is not an IPv4 address; give addresses and a..b ranges, \
                         separated by spaces"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn is_ipv4_cidr(text: &str) -> bool {
    let Some((address, prefix)) = text.split_once('/') else {
        return false;
    };
    address.parse::<Ipv4Addr>().is_ok() && prefix.parse::<u8>().is_ok_and(|p| p <= 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(spec: serde_json::Value) -> Result<(), FieldError> {
        serde_json::from_value::<ProviderNetworkSpec>(spec)
            .map_err(|e| FieldError::new("spec", e.to_string()))?
            .check()
    }

    #[test]
    fn emcos_provider_network_body_is_taken_and_its_mistakes_named() {
        let body = serde_json::json!({"cniType": "ovn4nfv", "providerNetType": "VLAN",
            "ipv4Subnets": [{"subnet": "10.10.20.0/24", "name": "subnet1", "gateway": "10.10.20.1/24",
                             "excludeIps": "10.10.20.2 10.10.20.5..10.10.20.10"}],
            "vlan": {"vlanID": "100", "providerInterfaceName": "eth1", "logicalInterfaceName": "eth1.100",
                     "vlanNodeSelector": "specific", "nodeLabelList": ["kubernetes.io/hostname=node1"]}});
        provider(body.clone()).unwrap();
        let mut bad = body.clone();
        bad["vlan"]["vlanID"] = "5000".into();
        assert_eq!(provider(bad).unwrap_err().field, "spec.vlan.vlanID");
        let mut bad = body.clone();
        bad["ipv4Subnets"][0]["subnet"] = "10.10.20.0".into();
        assert_eq!(
            provider(bad).unwrap_err().field,
            "spec.ipv4Subnets[0].subnet"
        );
        let mut bad = body.clone();
        bad["ipv4Subnets"][0]["excludeIps"] = "10.10.20.2..x".into();
        assert_eq!(
            provider(bad).unwrap_err().field,
            "spec.ipv4Subnets[0].excludeIps"
        );
        let mut bad = body;
        bad["cniType"] = "calico".into();
        assert_eq!(provider(bad).unwrap_err().field, "spec.cniType");
    }
}
