//! What users' input may ask of a host, and where it keeps its state.

use std::sync::Arc;

use wasmco_pki::kubeconfig::KubeconfigPolicy;

use super::error::ServeError;

/// What users' input may ask of this host.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Where the state lives; `None` is sled in the data directory.
    pub store: Option<StoreLocation>,
    /// What a cluster's kubeconfig may ask.
    pub kubeconfigs: Arc<KubeconfigPolicy>,
    /// Where uploaded components compile: a child process with a time
    /// limit, or (when unset) this process.
    pub compiler: Option<wasmco_runtime::CompilerProcess>,
    /// The limits a controller gets unless its registration tightens them.
    pub controller_limits: wasmco_runtime::ControllerLimits,
    /// Where the Helm renderer is cached and what a render may use.
    pub helm: wasmco_runtime::helm::HelmConfig,
    /// How this host appears to the others sharing its store.
    pub host: HostIdentity,
    /// Credentials and TLS for an etcd store.
    pub etcd: EtcdAccess,
}

/// How a host appears to the others sharing its store.
#[derive(Debug, Clone)]
pub struct HostIdentity {
    /// Unique among the hosts; `None` makes one from the machine's name.
    pub id: Option<String>,
    /// Where it serves the API.
    pub address: String,
    /// How long the others wait for a host that stopped answering before
    /// they take over its work.
    pub lease_ttl: std::time::Duration,
}

impl Default for HostIdentity {
    fn default() -> Self {
        HostIdentity {
            id: None,
            address: String::new(),
            lease_ttl: std::time::Duration::from_secs(10),
        }
    }
}

/// Credentials and TLS for an etcd store.
#[derive(Debug, Clone, Default)]
pub struct EtcdAccess {
    /// User name and password (etcd's authentication).
    pub user: Option<(String, String)>,
    /// The CA that signed etcd's serving certificate: the endpoints are
    /// then reached over TLS.
    pub ca: Option<std::path::PathBuf>,
    /// The client certificate and key this host shows etcd.
    pub identity: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl EtcdAccess {
    /// The store options for `endpoints` (written `http://…`).
    pub(super) fn options(
        &self,
        endpoints: &[String],
    ) -> Result<wasmco_store::EtcdOptions, ServeError> {
        let read = |path: &std::path::PathBuf| {
            std::fs::read(path).map_err(|e| {
                ServeError::Io(std::io::Error::new(
                    e.kind(),
                    format!("cannot read {}: {e}", path.display()),
                ))
            })
        };
        let tls = self.ca.is_some() || self.identity.is_some();
        let endpoints = endpoints
            .iter()
            .map(|endpoint| match endpoint.strip_prefix("http://") {
                Some(host) if tls => format!("https://{host}"),
                _ => endpoint.clone(),
            })
            .collect();
        Ok(wasmco_store::EtcdOptions {
            endpoints,
            user: self.user.clone(),
            ca_pem: self.ca.as_ref().map(read).transpose()?,
            identity_pem: match &self.identity {
                Some((certificate, key)) => Some((read(certificate)?, read(key)?)),
                None => None,
            },
        })
    }
}

/// A host id from the machine's name and a random suffix, so two hosts
/// started on one machine differ.
pub(super) fn default_host_id() -> String {
    let machine = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "wasmco".into());
    format!("{machine}-{:06x}", fastrand::u32(..0x100_0000))
}

/// Where a host keeps its state: `--store sled:DIR` or
/// `--store etcd://host:2379[,host2:2379…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// sled, embedded, in this directory.
    Sled(std::path::PathBuf),
    /// An etcd cluster, by its client endpoints (`http://host:port`).
    Etcd(Vec<String>),
}

impl std::str::FromStr for StoreLocation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(dir) = text.strip_prefix("sled:").filter(|d| !d.is_empty()) {
            return Ok(StoreLocation::Sled(dir.into()));
        }
        if let Some(hosts) = text.strip_prefix("etcd://") {
            let endpoints: Vec<String> = hosts
                .split(',')
                .map(|host| format!("http://{host}"))
                .collect();
            let valid = hosts.split(',').all(|host| {
                host.rsplit_once(':')
                    .is_some_and(|(name, port)| !name.is_empty() && port.parse::<u16>().is_ok())
            });
            if valid {
                return Ok(StoreLocation::Etcd(endpoints));
            }
        }
        Err(format!(
            "{text:?} is neither sled:DIR nor etcd://host:port[,host:port…]"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::StoreLocation;

    #[test]
    fn a_store_is_sled_in_a_directory_or_etcd_by_its_endpoints() {
        assert_eq!(
            "sled:/var/lib/wasmco".parse(),
            Ok(StoreLocation::Sled("/var/lib/wasmco".into()))
        );
        assert_eq!(
            "etcd://10.0.0.1:2379,etcd-2:2379".parse(),
            Ok(StoreLocation::Etcd(vec![
                "http://10.0.0.1:2379".into(),
                "http://etcd-2:2379".into()
            ]))
        );
        for refused in [
            "etcd://",
            "etcd://host",
            "etcd://host:x",
            "sled:",
            "mongodb://db",
        ] {
            assert!(refused.parse::<StoreLocation>().is_err(), "{refused}");
        }
    }
}
