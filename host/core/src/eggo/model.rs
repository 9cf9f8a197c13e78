//! The deploy file as a whole and its cluster-wide blocks.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::hosts::{HostConfig, LoadBalance};
use super::install::Install;
use super::serde_shapes::{empty_as_none, is_default, is_false, is_zero, nullable};

/// Eggo's deploy file. An empty string, list or block means "not set": Eggo
/// then uses its own default (see [`DeployConfig::with_defaults`]). Its
/// Debug form leaves the password out.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct DeployConfig {
    /// The cluster's name (an RFC 1123 subdomain).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    /// The SSH user on every machine.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The SSH password on every machine.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub password: String,
    /// The SSH private key on the deploying machine, instead of a password.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub private_key_path: String,
    /// The control-plane machines.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub masters: Vec<HostConfig>,
    /// The worker machines.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<HostConfig>,
    /// The etcd machines; when empty, every master runs etcd.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub etcds: Vec<HostConfig>,
    /// The load balancer, if any.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub loadbalance: LoadBalance,
    /// Whether the cluster's CA is supplied rather than made by Eggo.
    #[serde(skip_serializing_if = "is_false")]
    pub external_ca: bool,
    /// Where the supplied CA files are (absolute).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub external_ca_path: String,
    /// Kubernetes services.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub service: ServiceCluster,
    /// The pod network.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub network: Network,
    /// The API servers' address for clients, `host:port` (the load
    /// balancer's if there is one, else the first master's).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub apiserver_endpoint: String,
    /// Extra names and addresses in the API server's certificate.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub apiserver_cert_sans: ApiServerSans,
    /// The API server's request timeout, a Go duration.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub apiserver_timeout: String,
    /// An etcd outside the cluster (Eggo does not implement it yet).
    #[serde(skip_serializing_if = "is_false")]
    pub etcd_external: bool,
    /// The etcd cluster's token.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub etcd_token: String,
    /// The cluster DNS service's address, for kubelets.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub dns_vip: String,
    /// The cluster's DNS domain.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub dns_domain: String,
    /// The runtime's pause image.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pause_image: String,
    /// The kubelet's network plugin kind (`cni`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub network_plugin: String,
    /// Whether kubelets get serving certificates.
    #[serde(skip_serializing_if = "is_false")]
    pub enable_kubelet_serving: bool,
    /// Where CNI binaries are, comma-separated.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cni_bin_dir: String,
    /// The container runtime: `docker`, `iSulad` or `containerd`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub runtime: String,
    /// The runtime's socket URL.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub runtime_endpoint: String,
    /// Registry mirrors for image pulls.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub registry_mirrors: Vec<String>,
    /// Registries pulled from over plain HTTP.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub insecure_registries: Vec<String>,
    /// Extra command-line flags per component.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub config_extra_args: Vec<ExtraArgs>,
    /// Ports opened in the firewall beyond Kubernetes' own, by role.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub open_ports: RolePorts,
    /// What gets installed where.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub install: Install,
}

impl std::fmt::Debug for DeployConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let password = if self.password.is_empty() {
            ""
        } else {
            "(sealed)"
        };
        f.debug_struct("DeployConfig")
            .field("cluster_id", &self.cluster_id)
            .field("username", &self.username)
            .field("password", &password)
            .field("private_key_path", &self.private_key_path)
            .field("masters", &self.masters)
            .field("workers", &self.workers)
            .field("etcds", &self.etcds)
            .field("apiserver_endpoint", &self.apiserver_endpoint)
            .field("runtime", &self.runtime)
            .field("install", &self.install)
            .finish_non_exhaustive()
    }
}

/// The `service` block. Eggo's Go type has no YAML tags here, so its keys
/// are the lower-cased Go field names (`dnsaddr`, not `dns-addr`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceCluster {
    /// The service address range (CIDR).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cidr: String,
    /// The DNS service's address.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub dnsaddr: String,
    /// The service network's gateway address.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    /// How CoreDNS runs.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub dns: DnsConfig,
}

/// CoreDNS settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DnsConfig {
    /// As pods or as a binary on the masters.
    #[serde(
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub corednstype: Option<CorednsType>,
    /// The CoreDNS image version, for pods.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub imageversion: String,
    /// How many CoreDNS pods.
    #[serde(skip_serializing_if = "is_zero")]
    pub replicas: i64,
}

/// How CoreDNS is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CorednsType {
    /// As a Deployment in the cluster.
    Pod,
    /// As a systemd service on the masters.
    Binary,
}

impl FromStr for CorednsType {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "pod" => Ok(CorednsType::Pod),
            "binary" => Ok(CorednsType::Binary),
            _ => Err(format!(
                "unknown coredns type {text:?}: Eggo knows pod and binary"
            )),
        }
    }
}

/// The `network` block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Network {
    /// The pod address range (CIDR).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub podcidr: String,
    /// The network plugin, e.g. `calico`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub plugin: String,
    /// The plugin's settings. Eggo's reader takes `pluginargs`; its
    /// documentation writes `plugin-args`, also read here.
    #[serde(
        rename = "pluginargs",
        alias = "plugin-args",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub plugin_args: BTreeMap<String, String>,
}

/// Extra subject alternative names of the API server's certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiServerSans {
    /// DNS names.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub dnsnames: Vec<String>,
    /// IP addresses.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<String>,
}

/// Extra flags for one component.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ExtraArgs {
    /// The component, e.g. `kubelet` (see [`super::KNOWN_EXTRA_ARGS_NAMES`]).
    pub name: String,
    /// Flag (with its dashes) to value.
    #[serde(deserialize_with = "nullable")]
    pub extra_args: BTreeMap<String, String>,
}

/// Extra open ports by the role of the machines that open them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolePorts {
    /// On masters.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub master: Vec<OpenPort>,
    /// On workers.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub worker: Vec<OpenPort>,
    /// On etcd machines.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub etcd: Vec<OpenPort>,
    /// On the load balancer.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub loadbalance: Vec<OpenPort>,
}

/// One port opened in a machine's firewall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenPort {
    /// The port number.
    #[serde(default)]
    pub port: i64,
    /// Its protocol.
    pub protocol: Protocol,
}

/// A port's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}
