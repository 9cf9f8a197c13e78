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
    refused
}
