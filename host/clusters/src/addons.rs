//! The cluster's addons as objects for rsync, which applies them once the
//! cluster is registered and keeps them there: the file's `yaml` packages,
//! read from the package archive on wasmco's side, and CoreDNS as pods
//! (Eggo's default when `service.dns.corednstype` is empty). A `yaml`
//! package named by URL is fetched by the first master, as Eggo does (see
//! `plan::url_addons`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;

use serde_json::{Value, json};
use wasmco_core::eggo::{CorednsType, PackageType};

use crate::deploy::Deployment;
use crate::error::DeployError;
use crate::plan::{self, Plan, is_url};
use crate::topology::Roles;

/// The CoreDNS image's version when the file names none (Eggo's).
const COREDNS_VERSION: &str = "1.8.4";
/// CoreDNS pods when the file says no number (Eggo's).
const COREDNS_REPLICAS: i64 = 2;
/// A `yaml` package larger than this is refused rather than held in memory.
const MAX_ADDON_BYTES: u64 = 16 << 20;

/// One source of addon objects: a `yaml` package or wasmco's CoreDNS.
#[derive(Debug, Clone, PartialEq)]
pub struct Addon {
    /// Where it comes from, for messages: `file/calico.yaml`, `coredns`.
    pub source: String,
    /// Its objects, as YAML documents (a `yaml` package's text as is).
    pub manifests: String,
}

/// The addons of `deployment`, in Eggo's order: the `yaml` packages, then
/// DNS.
pub fn addons(deployment: &Deployment) -> Result<Vec<Addon>, DeployError> {
    let plan = deployment.plan();
    let mut addons = archive_yamls(deployment, &plan)?;
    if let Some(coredns) = coredns(&plan) {
        addons.push(coredns);
    }
    Ok(addons)
}

/// The masters' `yaml` packages that come in the archive, read from the
/// first master's architecture's archive.
fn archive_yamls(deployment: &Deployment, plan: &Plan<'_>) -> Result<Vec<Addon>, DeployError> {
    let master = Roles {
        master: true,
        ..Roles::default()
    };
    let wanted: Vec<String> = plan::packages_for(plan, &master)
        .into_iter()
        .filter(|package| package.kind == PackageType::Yaml)
        .flat_map(|package| package.names())
        .filter(|name| !is_url(name))
        .map(|name| format!("file/{name}"))
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let arch = deployment
        .topology
        .first_master()
        .map(|machine| machine.arch.as_str())
        .unwrap_or("amd64");
    let archive = deployment
        .archives
        .get(arch)
        .ok_or_else(|| DeployError::Addon {
            addon: wanted[0].clone(),
            reason: format!("the file names no package archive for {arch}"),
        })?;
    let mut found = read_members(&archive.local.path, &wanted).map_err(|e| DeployError::Addon {
        addon: archive.name.clone(),
        reason: e.to_string(),
    })?;
    wanted
        .into_iter()
        .map(|member| match found.remove(&member) {
            Some(manifests) => Ok(Addon {
                source: member,
                manifests,
            }),
            None => Err(DeployError::Addon {
                reason: format!("not in the package archive {}", archive.name),
                addon: member,
            }),
        })
        .collect()
}

/// The text of each of `wanted`'s members of the gzipped tar at `path`.
fn read_members(
    path: &std::path::Path,
    wanted: &[String],
) -> std::io::Result<BTreeMap<String, String>> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(File::open(path)?));
    let mut found = BTreeMap::new();
    for entry in archive.entries()? {
        let entry = entry?;
        let member = entry.path()?.to_string_lossy().into_owned();
        let member = member.trim_start_matches("./");
        if !wanted.iter().any(|name| name == member) {
            continue;
        }
        let member = member.to_owned();
        let mut text = String::new();
        entry.take(MAX_ADDON_BYTES + 1).read_to_string(&mut text)?;
        if text.len() as u64 > MAX_ADDON_BYTES {
            return Err(std::io::Error::other(format!(
                "{member} is larger than {} MiB",
                MAX_ADDON_BYTES >> 20
            )));
        }
        found.insert(member, text);
        if found.len() == wanted.len() {
            break;
        }
    }
    Ok(found)
}

/// CoreDNS as pods behind the cluster's DNS address, serving its domain;
/// none when the file runs it otherwise. The image is Eggo's
/// (`coredns/coredns:VERSION`): the file's `image` packages bring it, or
/// the workers pull it.
fn coredns(plan: &Plan<'_>) -> Option<Addon> {
    let dns = &plan.config.service.dns;
    if dns.corednstype.unwrap_or(CorednsType::Pod) != CorednsType::Pod {
        return None;
    }
    let version = Some(dns.imageversion.as_str())
        .filter(|version| !version.is_empty())
        .unwrap_or(COREDNS_VERSION);
    let replicas = if dns.replicas > 0 {
        dns.replicas
    } else {
        COREDNS_REPLICAS
    };
    let domain = &plan.config.dns_domain;
    let corefile = format!(
        ".:53 {{\n    errors\n    health {{\n        lameduck 5s\n    }}\n    ready\n    \
         kubernetes {domain} in-addr.arpa ip6.arpa {{\n        fallthrough in-addr.arpa ip6.arpa\n    }}\n    \
         prometheus :9153\n    forward . /etc/resolv.conf\n    cache 30\n    loop\n    reload\n    \
         loadbalance\n}}\n"
    );
    let app = json!({ "k8s-app": "kube-dns" });
    let objects = [
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "coredns", "namespace": "kube-system"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:coredns"},
        "rules": [
            {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
             "verbs": ["list", "watch"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "coredns", "namespace": "kube-system"},
            "data": {"Corefile": corefile}}),
        coredns_deployment(&app, version, replicas),
        json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kube-dns", "namespace": "kube-system",
                     "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                "kubernetes.io/name": "CoreDNS"}},
        "spec": {"selector": app, "clusterIP": plan.topology.dns_ip.to_string(),
                 "ports": [
                     {"name": "dns", "port": 53, "protocol": "UDP"},
                     {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                     {"name": "metrics", "port": 9153, "protocol": "TCP"},
                 ]}}),
    ];
    let manifests = objects
        .iter()
        .map(|object| serde_json::to_string(object).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n---\n");
    Some(Addon {
        source: "coredns".to_owned(),
        manifests,
    })
}

/// CoreDNS's Deployment: its pods spread over the nodes, ready when its
/// `ready` plugin says the Kubernetes API has been read.
fn coredns_deployment(app: &Value, version: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "coredns", "namespace": "kube-system", "labels": app},
    "spec": {
        "replicas": replicas,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        "selector": {"matchLabels": app},
        "template": {
            "metadata": {"labels": app},
            "spec": {
                "priorityClassName": "system-cluster-critical",
                "serviceAccountName": "coredns",
                "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": app},
                        "topologyKey": "kubernetes.io/hostname"}}]}},
                "dnsPolicy": "Default",
                "containers": [{
                    "name": "coredns",
                    "image": format!("coredns/coredns:{version}"),
                    "imagePullPolicy": "IfNotPresent",
                    "args": ["-conf", "/etc/coredns/Corefile"],
                    "resources": {"limits": {"memory": "170Mi"},
                                  "requests": {"cpu": "100m", "memory": "70Mi"}},
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": true}],
                    "ports": [
                        {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                        {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                        {"containerPort": 9153, "name": "metrics", "protocol": "TCP"},
                    ],
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                        "readOnlyRootFilesystem": true,
                    },
                    "livenessProbe": {"httpGet": {"path": "/health", "port": 8080},
                                      "initialDelaySeconds": 60, "timeoutSeconds": 5,
                                      "failureThreshold": 5},
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}},
                }],
                "volumes": [{"name": "config", "configMap": {"name": "coredns",
                    "items": [{"key": "Corefile", "path": "Corefile"}]}}],
            },
        },
    }})
}
