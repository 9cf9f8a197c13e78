//! What a kubeconfig may ask of the host: proxies or not, and the
//! networks an API server may be reached in.

use std::net::IpAddr;

use ipnet::IpNet;

use super::server::{Host, embedded_addresses};

/// Host names that are the cloud's instance metadata service, whatever
/// they resolve to.
const METADATA_HOSTS: [&str; 4] = [
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
];

/// Networks no cluster's API server is in: unspecified, link-local (the
/// metadata services live there), cloud metadata addresses, broadcast and
/// multicast.
const DEFAULT_DENIED: [&str; 10] = [
    "0.0.0.0/8",
    "169.254.0.0/16",
    "100.100.100.200/32",
    "255.255.255.255/32",
    "224.0.0.0/4",
    "::/128",
    "fe80::/10",
    "fd00:ec2::254/128",
    "ff00::/8",
    "fec0::/10",
];

/// What a kubeconfig may ask of the host. The defaults refuse proxies and
/// the networks in which no API server lives; flags add denied networks or
/// allow some back (the most specific network that names an address wins).
#[derive(Debug, Clone)]
pub struct KubeconfigPolicy {
    pub(super) allow_proxy: bool,
    /// Networks and whether an address in them is allowed.
    rules: Vec<(IpNet, bool)>,
}

impl Default for KubeconfigPolicy {
    fn default() -> Self {
        KubeconfigPolicy {
            allow_proxy: false,
            rules: DEFAULT_DENIED
                .iter()
                .map(|net| (net.parse().expect("the default networks parse"), false))
                .collect(),
        }
    }
}

impl KubeconfigPolicy {
    /// The defaults, with proxies allowed or not and more networks denied
    /// or allowed.
    pub fn new(allow_proxy: bool, denied: &[IpNet], allowed: &[IpNet]) -> Self {
        let mut policy = KubeconfigPolicy {
            allow_proxy,
            ..KubeconfigPolicy::default()
        };
        policy
            .rules
            .extend(denied.iter().map(|net| (net.trunc(), false)));
        policy
            .rules
            .extend(allowed.iter().map(|net| (net.trunc(), true)));
        policy
    }

    /// Whether an API server at `address` may be reached. Addresses that
    /// embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4)
    /// are judged as that address too, so a denied IPv4 network cannot be
    /// reached through an IPv6 spelling of it.
    pub fn allows(&self, address: IpAddr) -> bool {
        embedded_addresses(address)
            .into_iter()
            .all(|ip| self.verdict(ip))
    }

    fn verdict(&self, address: IpAddr) -> bool {
        // The most specific network decides; at equal length a denial wins.
        self.rules
            .iter()
            .filter(|(net, _)| net.contains(&address))
            .max_by_key(|(net, allowed)| (net.prefix_len(), !allowed))
            .is_none_or(|(_, allowed)| *allowed)
    }

    /// Whether the host part of a server URL may be reached, before any
    /// name is resolved.
    pub(super) fn check_host(&self, host: &Host) -> Result<(), String> {
        match host {
            Host::Ip(ip) if !self.allows(*ip) => Err(format!(
                "{ip} is in a network this server does not reach (link-local, metadata, \
                 unspecified or denied by --deny-network)"
            )),
            Host::Name(name)
                if METADATA_HOSTS
                    .iter()
                    .any(|m| name.trim_end_matches('.').eq_ignore_ascii_case(m)) =>
            {
                Err(format!("{name} is the cloud's metadata service"))
            }
            _ => Ok(()),
        }
    }
}
