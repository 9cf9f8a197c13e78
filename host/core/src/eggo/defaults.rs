//! What Eggo uses for what a deploy file leaves out (`cmd/configs.go`:
//! `getDefaultClusterdeploymentConfig`, `createCommonHostConfig`,
//! `fillEtcdsIfNotExist`, `fillAPIEndPoint`; the runtime's default from
//! `pkg/clusterdeployment/runtime/runtime.go`).

use super::hosts::HostConfig;
use super::model::DeployConfig;

/// The cluster name when `cluster-id` is empty.
pub const DEFAULT_CLUSTER_ID: &str = "k8s-cluster";
/// A machine's SSH port when `port` is 0.
pub const DEFAULT_SSH_PORT: i64 = 22;
/// A machine's architecture when `arch` is empty.
pub const DEFAULT_ARCH: &str = "amd64";
/// The API servers' port behind the first master when there is no endpoint.
pub const DEFAULT_APISERVER_PORT: u16 = 6443;

impl DeployConfig {
    /// The file with Eggo's defaults filled into what it leaves out: etcd
    /// on the masters, port 22 and `amd64` for machines, and the cluster
    /// settings Eggo assumes. Names of unnamed machines are left empty
    /// (Eggo's checker refuses them anyway).
    pub fn with_defaults(&self) -> DeployConfig {
        let mut config = self.clone();
        if config.etcds.is_empty() {
            config.etcds = config.masters.clone();
        }
        let hosts = config
            .masters
            .iter_mut()
            .chain(&mut config.workers)
            .chain(&mut config.etcds);
        hosts.for_each(fill_host);
        if config.loadbalance.is_set() {
            let lb = &mut config.loadbalance;
            or_default(&mut lb.arch, DEFAULT_ARCH);
            if lb.port == 0 {
                lb.port = DEFAULT_SSH_PORT;
            }
        }
        if config.apiserver_endpoint.is_empty() {
            config.apiserver_endpoint = default_endpoint(&config);
        }
        fill_cluster(&mut config);
        config
    }
}

pub(super) fn fill_host(host: &mut HostConfig) {
    or_default(&mut host.arch, DEFAULT_ARCH);
    if host.port == 0 {
        host.port = DEFAULT_SSH_PORT;
    }
}

/// The load balancer's listener if there is one, else the first master.
fn default_endpoint(config: &DeployConfig) -> String {
    let lb = &config.loadbalance;
    if lb.is_set() && lb.bind_port != 0 {
        return format!("{}:{}", lb.ip, lb.bind_port);
    }
    config
        .masters
        .first()
        .map(|master| format!("{}:{DEFAULT_APISERVER_PORT}", master.ip))
        .unwrap_or_default()
}

fn fill_cluster(config: &mut DeployConfig) {
    or_default(&mut config.cluster_id, DEFAULT_CLUSTER_ID);
    or_default(&mut config.service.cidr, "10.32.0.0/16");
    or_default(&mut config.service.dnsaddr, "10.32.0.10");
    or_default(&mut config.service.gateway, "10.32.0.1");
    or_default(&mut config.network.podcidr, "10.244.0.0/16");
    or_default(&mut config.apiserver_timeout, "120s");
    or_default(&mut config.etcd_token, "etcd-cluster");
    or_default(&mut config.dns_vip, "10.32.0.10");
    or_default(&mut config.dns_domain, "cluster.local");
    or_default(&mut config.pause_image, "k8s.gcr.io/pause:3.2");
    or_default(&mut config.network_plugin, "cni");
    or_default(&mut config.cni_bin_dir, "/usr/libexec/cni,/opt/cni/bin");
    or_default(&mut config.runtime, "docker");
}

fn or_default(field: &mut String, default: &str) {
    if field.is_empty() {
        default.clone_into(field);
    }
}
