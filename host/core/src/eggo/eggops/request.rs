//! Eggops' `Cluster` (a request for a cluster by requirements) and
//! `Infrastructure` (what its machines are installed with), and the Eggo
//! deploy file they make once machines are picked, field for field as
//! Eggops' controller writes it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::machines::{MachineSpec, Requirement};
use crate::FieldError;
use crate::eggo::install::{Install, PackageSource};
use crate::eggo::model::{DeployConfig, RolePorts};

/// A reference to another object by name (`machineLoginSecret`,
/// `infrastructure`); a namespace, when given, must be the request's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The object's name.
    pub name: String,
    /// Its namespace (Kubernetes'); kept, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Eggops' `Cluster` spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterRequestSpec {
    /// The masters it needs.
    pub master_require: Requirement,
    /// The workers it needs.
    pub worker_require: Requirement,
    /// A load balancer's machine: not deployed by wasmco (refused when it
    /// asks for one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadbalance_requires: Option<Requirement>,
    /// The load balancer's port.
    #[serde(
        default,
        rename = "loadbalance-bindport",
        skip_serializing_if = "Option::is_none"
    )]
    pub loadbalance_bindport: Option<i32>,
    /// The Secret its machines are logged in to with (basic-auth or ssh-auth).
    pub machine_login_secret: ObjectRef,
    /// What its machines are installed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure: Option<ObjectRef>,
    /// Where the API server is advertised.
    #[serde(default)]
    pub apiendpoint: ApiEndpoint,
    /// The container runtime.
    #[serde(default)]
    pub runtime: Runtime,
    /// The service and pod networks.
    #[serde(default)]
    pub network: ClusterNetwork,
    /// Addons by name: Eggops keeps them, and so does wasmco.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addons: Vec<String>,
    /// Kubelet serving certificates signed through the CSR API.
    #[serde(default)]
    pub enable_kubelet_serving: bool,
    /// wasmco's own: deploy-file fields Eggops' `Cluster` has no place for
    /// (`pause-image`, `cni-bin-dir`, `config-extra-args`, …), laid under
    /// what the request makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub deploy_file: Option<serde_json::Value>,
}

/// `apiendpoint`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiEndpoint {
    /// The address advertised.
    #[serde(default)]
    pub advertise: String,
    /// The port (6443 when absent).
    #[serde(default, rename = "bind-port")]
    pub bind_port: Option<u16>,
}

/// `runtime`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    /// The runtime's name.
    #[serde(default)]
    pub runtime: String,
    /// Its endpoint.
    #[serde(default, rename = "runtime-endpoint")]
    pub runtime_endpoint: String,
}

/// `network`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClusterNetwork {
    /// The service range.
    #[serde(default)]
    pub service_cidr: String,
    /// The cluster DNS service's address.
    #[serde(default)]
    pub service_dns_ip: String,
    /// The service range's gateway.
    #[serde(default)]
    pub service_gateway: String,
    /// The pod range.
    #[serde(default)]
    pub pod_cidr: String,
    /// The pod network plugin.
    #[serde(default)]
    pub pod_plugin: String,
    /// Its arguments.
    #[serde(default)]
    pub pod_plugin_args: BTreeMap<String, String>,
}

/// Eggops' `Infrastructure` spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfrastructureSpec {
    /// The volume claim Eggops mounts the packages from; with wasmco the
    /// packages are on the host, under its package directory. Eggops'
    /// own example spells it `packagePersistentVolumeClain`.
    #[serde(
        default,
        rename = "packagePersistentVolumeClaim",
        alias = "packagePersistentVolumeClain",
        skip_serializing_if = "Option::is_none"
    )]
    pub package_persistent_volume_claim: Option<ObjectRef>,
    /// What is installed, as a deploy file's `install`, with the archive
    /// per architecture under `package-source.srcPackages`.
    #[serde(default)]
    #[schemars(with = "serde_json::Value")]
    pub install: serde_json::Value,
    /// The ports opened per role, as a deploy file's `open-ports`.
    #[serde(default, rename = "open-ports")]
    #[schemars(with = "serde_json::Value")]
    pub open_ports: serde_json::Value,
}

impl InfrastructureSpec {
    /// Its `install` and `open-ports` as a deploy file has them, each
    /// relative archive path under `package_dir`.
    pub fn deploy_parts(&self, package_dir: &str) -> Result<(Install, RolePorts), FieldError> {
        let mut install = self.install.clone();
        if let Some(source) = install
            .get_mut("package-source")
            .and_then(serde_json::Value::as_object_mut)
            && let Some(packages) = source.remove("srcPackages")
        {
            source.insert("srcpath".to_owned(), packages);
        }
        let mut install: Install = crate::document::from_value(&install, "spec.install")?;
        if let Some(PackageSource { srcpath, .. }) = &mut install.package_source {
            for path in srcpath.values_mut() {
                if !path.starts_with('/') {
                    *path = format!("{}/{path}", package_dir.trim_end_matches('/'));
                }
            }
        }
        let open_ports = match &self.open_ports {
            serde_json::Value::Null => RolePorts::default(),
            ports => crate::document::from_value(ports, "spec.open-ports")?,
        };
        Ok((install, open_ports))
    }
}

impl ClusterRequestSpec {
    /// The deploy file of cluster `name`: these masters and workers (by
    /// registered name), logged in to as `username` with `password` (or,
    /// when empty, the key the upload carries), installed as
    /// `infrastructure` says.
    pub fn deploy_config(
        &self,
        name: &str,
        machines: &[(&str, &MachineSpec, Role)],
        login: (&str, &str),
        infrastructure: Option<(Install, RolePorts)>,
    ) -> Result<DeployConfig, FieldError> {
        let mut config: DeployConfig = match &self.deploy_file {
            Some(fragment) => crate::document::from_value(fragment, "spec.deployFile")?,
            None => DeployConfig::default(),
        };
        config.cluster_id = name.to_owned();
        config.username = login.0.to_owned();
        config.password = login.1.to_owned();
        if !self.apiendpoint.advertise.is_empty() {
            let host = match self.apiendpoint.advertise.parse::<std::net::Ipv6Addr>() {
                Ok(v6) => format!("[{v6}]"),
                Err(_) => self.apiendpoint.advertise.clone(),
            };
            config.apiserver_endpoint = format!(
                "https://{host}:{}",
                self.apiendpoint.bind_port.unwrap_or(6443)
            );
        }
        let set = |into: &mut String, from: &String| {
            if !from.is_empty() {
                into.clone_from(from);
            }
        };
        set(&mut config.runtime, &self.runtime.runtime);
        set(&mut config.runtime_endpoint, &self.runtime.runtime_endpoint);
        let network = &self.network;
        set(&mut config.service.cidr, &network.service_cidr);
        set(&mut config.service.dnsaddr, &network.service_dns_ip);
        set(&mut config.service.gateway, &network.service_gateway);
        set(&mut config.network.podcidr, &network.pod_cidr);
        set(&mut config.network.plugin, &network.pod_plugin);
        if !network.pod_plugin_args.is_empty() {
            config.network.plugin_args = network.pod_plugin_args.clone();
        }
        config.enable_kubelet_serving |= self.enable_kubelet_serving;
        let mut names: BTreeMap<String, &str> = BTreeMap::new();
        for (registered, spec, role) in machines {
            let host = spec.host(registered);
            if let Some(other) = names.insert(host.name.clone(), registered) {
                return Err(FieldError::new(
                    "spec.hostname",
                    format!(
                        "machines {other} and {registered} both have hostname {}: a cluster's \
                         nodes need names of their own",
                        host.name
                    ),
                ));
            }
            match role {
                Role::Master => config.masters.push(host),
                Role::Worker => config.workers.push(host),
            }
        }
        if let Some(parts) = infrastructure {
            (config.install, config.open_ports) = parts;
        }
        Ok(config)
    }

    /// What wasmco cannot do of the request, by field.
    pub fn check(&self) -> Result<(), FieldError> {
        if self
            .loadbalance_requires
            .as_ref()
            .is_some_and(|lb| lb.number > 0)
        {
            return Err(FieldError::new(
                "spec.loadbalanceRequires",
                "a load balancer in front of the masters is not deployed by wasmco yet",
            ));
        }
        if self.master_require.number == 0 {
            return Err(FieldError::new(
                "spec.masterRequire.number",
                "a cluster needs at least one master",
            ));
        }
        crate::check_name(
            "spec.machineLoginSecret.name",
            &self.machine_login_secret.name,
        )?;
        if let Some(infrastructure) = &self.infrastructure {
            crate::check_name("spec.infrastructure.name", &infrastructure.name)?;
        }
        Ok(())
    }
}

/// What a picked machine becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A master (and etcd member).
    Master,
    /// A worker.
    Worker,
}
