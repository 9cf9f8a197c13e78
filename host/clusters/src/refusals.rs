//! What wasmco does not do of what an Eggo file may ask: refused with the
//! field named, never quietly ignored.

use wasmco_core::FieldError;
use wasmco_core::eggo::{CorednsType, DeployConfig};

/// The fields of `config` (defaults filled in) wasmco cannot honour.
pub fn refusals(config: &DeployConfig) -> Vec<FieldError> {
    let mut refused = Vec::new();
    let mut refuse = |field: &str, reason: &str| refused.push(FieldError::new(field, reason));
    if !config.runtime.eq_ignore_ascii_case("containerd") {
        refuse(
            "runtime",
            "wasmco sets machines up with containerd; set runtime: containerd (Eggo's default is docker)",
        );
    }
    if config.loadbalance.is_set() {
        refuse(
            "loadbalance",
            "a load balancer in front of the masters is not deployed by wasmco yet",
        );
    }
    if config.etcd_external {
        refuse(
            "etcd-external",
            "an etcd outside the cluster is not implemented (nor is it in Eggo)",
        );
    }
    if config.external_ca {
        refuse(
            "external-ca",
            "import the CA through the cluster's PKI instead; a CA read from a path is not supported",
        );
    }
    // The architecture names a package archive and goes into etcd's
    // settings: a plain word, as Eggo's `amd64` and `arm64` are.
    let lists = [
        ("masters", &config.masters),
        ("workers", &config.workers),
        ("etcds", &config.etcds),
    ];
    for (list, hosts) in lists {
        for (index, host) in hosts.iter().enumerate() {
            let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
            if !host.arch.chars().all(plain) {
                refuse(
                    &format!("{list}[{index}].arch"),
                    "is not an architecture (amd64, arm64)",
                );
            }
        }
    }
    if config.enable_kubelet_serving {
        refuse(
            "enable-kubelet-serving",
            "kubelet serving certificates are not approved by wasmco yet",
        );
    }
    if config.service.dns.corednstype == Some(CorednsType::Binary) {
        refuse(
            "service.dns.corednstype",
            "CoreDNS as a binary on the masters is not deployed by wasmco yet; use pod",
        );
    }
    if config.masters.is_empty() {
        refuse("masters", "a cluster needs at least one master");
    }
    for (field, reason) in package_problems(config) {
        refused.push(FieldError::new(field, reason));
    }
    refused
}

/// Package names go into shell commands and paths: a name is one plain
/// file name. Copies under `/tmp`, which anyone may write, are refused:
/// root would follow what another user planted there.
fn package_problems(config: &DeployConfig) -> Vec<(String, String)> {
    let install = &config.install;
    let mut problems = Vec::new();
    for (list, packages) in install.lists() {
        for (index, package) in packages.iter().enumerate() {
            let at = format!("install.{list}[{index}]");
            if let Some(name) = package
                .names()
                .find(|name| !crate::plan::is_url(name) && !plain_name(name))
            {
                problems.push((
                    format!("{at}.name"),
                    format!("{name:?} is not a plain file name (letters, digits, '.', '_', '+', '-'; not starting with '-' or '.')"),
                ));
            }
            if package.dst == "/tmp" || package.dst.starts_with("/tmp/") {
                problems.push((
                    format!("{at}.dst"),
                    "anyone may write under /tmp; copy packages elsewhere".to_owned(),
                ));
            }
        }
    }
    let dstpath = install
        .package_source
        .as_ref()
        .map_or("", |source| source.dstpath.as_str());
    if dstpath == "/tmp" || dstpath.starts_with("/tmp/") {
        problems.push((
            "install.package-source.dstpath".to_owned(),
            "anyone may write under /tmp; unpack the archive elsewhere".to_owned(),
        ));
    }
    problems
}

fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
}

/// Eggo's template (`eggo template`) with what wasmco refuses changed to
/// what it deploys: containerd, no load balancer, CoreDNS as a pod, the
/// bridge pod network; Eggo's keys and layout otherwise.
pub fn template() -> DeployConfig {
    let mut config = wasmco_core::eggo::template();
    config.runtime = "containerd".to_owned();
    config.runtime_endpoint = "unix:///run/containerd/containerd.sock".to_owned();
    config.loadbalance = Default::default();
    config.apiserver_endpoint = String::new();
    config.service.dns.corednstype = Some(CorednsType::Pod);
    config.network.plugin = "bridge".to_owned();
    config.open_ports = Default::default();
    config
}
