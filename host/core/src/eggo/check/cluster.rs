//! Cluster-wide fields: identity and SSH credentials, addresses and
//! ranges, the runtime, open ports and extra flags. Unless marked, each
//! rule is one of `cmd/checker.go` (`ClusterConfigResponsibility`,
//! `ServiceClusterResponsibility`, `NetworkResponsibility`,
//! `ApiSansResponsibility`, `OpenPortResponsibility`).

use super::super::model::{DeployConfig, OpenPort};
use super::super::syntax::{
    cidr, dns1123_subdomain, go_duration, ip, is_absolute, split_host_port, url,
};
use super::problems::Problems;

/// The components `config-extra-args` may name: those Eggo's documentation
/// lists, and `container-engine`, which its code also applies.
pub const KNOWN_EXTRA_ARGS_NAMES: [&str; 7] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "kubelet",
    "container-engine",
];

/// The runtimes Eggo can set up, compared case-insensitively
/// (`pkg/clusterdeployment/runtime/runtime.go`, `GetRuntime`: another name
/// fails the deploy).
const RUNTIMES: [&str; 3] = ["docker", "isulad", "containerd"];

/// The cluster's name, how Eggo logs in, and that there is a master.
pub(super) fn check_identity(config: &DeployConfig, problems: &mut Problems) {
    problems.test("cluster-id", dns1123_subdomain(&config.cluster_id));
    if config.private_key_path.is_empty() {
        let reason =
            "no private-key-path, so Eggo logs in with username and password: both must be set";
        if config.username.is_empty() {
            problems.add("username", reason);
        }
        if config.password.is_empty() {
            problems.add("password", reason);
        }
    } else if !is_absolute(&config.private_key_path) {
        problems.add("private-key-path", not_absolute(&config.private_key_path));
    }
    if config.masters.is_empty() {
        problems.add("masters", "no master: a cluster needs at least one");
    }
}

/// Paths, addresses, ranges and names of the cluster as a whole.
pub(super) fn check_cluster(config: &DeployConfig, problems: &mut Problems) {
    let absolute = |path: &str| {
        is_absolute(path)
            .then_some(())
            .ok_or_else(|| not_absolute(path))
    };
    problems.test_set("external-ca-path", &config.external_ca_path, absolute);
    problems.test_set("apiserver-endpoint", &config.apiserver_endpoint, endpoint);
    problems.test_set("apiserver-timeout", &config.apiserver_timeout, go_duration);
    problems.test_set("dns-vip", &config.dns_vip, ip);
    problems.test_set("dns-domain", &config.dns_domain, dns1123_subdomain);
    problems.test_set("cni-bin-dir", &config.cni_bin_dir, absolute);
    problems.test_set("runtime", &config.runtime, runtime);
    problems.test_set("runtime-endpoint", &config.runtime_endpoint, url);
    problems.test_set("service.cidr", &config.service.cidr, cidr);
    problems.test_set("service.dnsaddr", &config.service.dnsaddr, ip);
    problems.test_set("service.gateway", &config.service.gateway, ip);
    problems.test_set("network.podcidr", &config.network.podcidr, cidr);
    let sans = &config.apiserver_cert_sans;
    for (i, name) in sans.dnsnames.iter().enumerate() {
        problems.test(
            &format!("apiserver-cert-sans.dnsnames[{i}]"),
            dns1123_subdomain(name),
        );
    }
    for (i, address) in sans.ips.iter().enumerate() {
        problems.test(&format!("apiserver-cert-sans.ips[{i}]"), ip(address));
    }
    check_open_ports(config, problems);
    check_extra_args(config, problems);
}

fn not_absolute(path: &str) -> String {
    format!("{path:?} is not an absolute path")
}

/// `host:port`, the host an address or a DNS name, the port a number.
fn endpoint(text: &str) -> Result<(), String> {
    let (host, port) = split_host_port(text)?;
    if ip(host).is_err() {
        dns1123_subdomain(host).map_err(|e| format!("host of {text:?}: {e}"))?;
    }
    if !port.is_empty() && port.parse::<i64>().is_err() {
        return Err(format!("port of {text:?} is not a number"));
    }
    Ok(())
}

fn runtime(name: &str) -> Result<(), String> {
    if RUNTIMES.contains(&name.to_ascii_lowercase().as_str()) {
        Ok(())
    } else {
        Err(format!(
            "unknown runtime {name:?}: Eggo sets up docker, iSulad or containerd"
        ))
    }
}

/// Eggo's `endpoint.ValidPort`.
pub(super) fn port(number: i64) -> Result<(), String> {
    if (1..=65535).contains(&number) {
        Ok(())
    } else if number == 0 {
        Err("not set (a port from 1 to 65535)".to_owned())
    } else {
        Err(format!("{number} is not a port (1 to 65535)"))
    }
}

fn check_open_ports(config: &DeployConfig, problems: &mut Problems) {
    let ports = &config.open_ports;
    let roles: [(&str, &[OpenPort]); 4] = [
        ("master", &ports.master),
        ("worker", &ports.worker),
        ("etcd", &ports.etcd),
        ("loadbalance", &ports.loadbalance),
    ];
    for (role, list) in roles {
        for (i, open) in list.iter().enumerate() {
            problems.test(&format!("open-ports.{role}[{i}].port"), port(open.port));
        }
    }
}

/// Not in Eggo's checker, which only warns and ignores an unknown
/// component; its documentation lists the names and asks each flag to be
/// written with its dashes, so both are refused here.
fn check_extra_args(config: &DeployConfig, problems: &mut Problems) {
    for (i, extra) in config.config_extra_args.iter().enumerate() {
        if !KNOWN_EXTRA_ARGS_NAMES.contains(&extra.name.as_str()) {
            problems.add(
                format!("config-extra-args[{i}].name"),
                format!(
                    "unknown component {:?}: Eggo takes {}",
                    extra.name,
                    KNOWN_EXTRA_ARGS_NAMES.join(", ")
                ),
            );
        }
        for flag in extra
            .extra_args
            .keys()
            .filter(|flag| !flag.starts_with('-'))
        {
            problems.add(
                format!("config-extra-args[{i}].extra-args.{flag}"),
                "a flag is written with its dashes, e.g. \"--cgroup-driver\"",
            );
        }
    }
}
