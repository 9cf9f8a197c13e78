//! Kubeconfigs carry data, never instructions.
//!
//! A kubeconfig can tell a client to run a command (`exec`, `auth-provider`),
//! read files of the machine it runs on (`tokenFile`, `client-certificate`,
//! `client-key`, `certificate-authority`), go through a proxy, or talk to
//! the cloud's metadata service. A cluster's kubeconfig comes from a user of
//! the API, so none of that may reach the host: [`KubeconfigPolicy::check`]
//! refuses it at upload, and [`CheckedKubeconfig::client_config`] builds the
//! kube-rs client from an allow-list of inline values only, so a stored
//! kubeconfig that an older version accepted still cannot run or read
//! anything.

mod checked;
mod server;

pub use checked::{CheckedKubeconfig, cluster_status};
use server::{Host, ServerUrl, embedded_addresses};

use std::net::IpAddr;

use ipnet::IpNet;
use kube::config::{AuthInfo, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

/// Why a kubeconfig was refused, naming the field inside it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct KubeconfigError {
    /// The field's path inside the kubeconfig (`users[0].user.exec`).
    pub field: String,
    /// Why it is refused.
    pub reason: String,
}

impl KubeconfigError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        KubeconfigError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

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
    allow_proxy: bool,
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

    /// Reads and checks a kubeconfig: every cluster and user entry is
    /// checked, not only the current context's.
    pub fn check(&self, bytes: &[u8]) -> Result<CheckedKubeconfig, KubeconfigError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| KubeconfigError::new("", "a kubeconfig is UTF-8 YAML"))?;
        let config = Kubeconfig::from_yaml(text).map_err(parse_error)?;
        for (index, user) in config.auth_infos.iter().enumerate() {
            check_user(index, user)?;
        }
        for (index, cluster) in config.clusters.iter().enumerate() {
            self.check_cluster(index, cluster)?;
        }
        select(&config)
    }

    /// Checks a cluster entry's fields; its server's address is checked
    /// again when a client is made, since a name can resolve anywhere.
    fn check_cluster(&self, index: usize, named: &NamedCluster) -> Result<(), KubeconfigError> {
        let field = |name: &str| format!("clusters[{index}].cluster.{name}");
        let Some(cluster) = &named.cluster else {
            return Err(KubeconfigError::new(
                format!("clusters[{index}].cluster"),
                format!("cluster {:?} has no settings", named.name),
            ));
        };
        if cluster.certificate_authority.is_some() {
            return Err(KubeconfigError::new(
                field("certificate-authority"),
                "a file path on the host is not accepted; give the CA inline as \
                 certificate-authority-data (base64 PEM)",
            ));
        }
        if cluster.proxy_url.is_some() && !self.allow_proxy {
            return Err(KubeconfigError::new(
                field("proxy-url"),
                "proxies are refused on this server (start it with --allow-kubeconfig-proxy \
                 to accept them)",
            ));
        }
        let server = cluster
            .server
            .as_deref()
            .ok_or_else(|| KubeconfigError::new(field("server"), "no server URL"))?;
        // The URL itself is not quoted back: it may carry credentials.
        let server = ServerUrl::parse(server)
            .map_err(|reason| KubeconfigError::new(field("server"), reason))?;
        self.check_host(&server.host)
            .map_err(|reason| KubeconfigError::new(field("server"), reason))
    }

    /// Whether the host part of a server URL may be reached, before any
    /// name is resolved.
    fn check_host(&self, host: &Host) -> Result<(), String> {
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

/// A parse error, told by its place only: the parser's own message quotes
/// the input around it, which may be a credential.
fn parse_error(error: kube::config::KubeconfigError) -> KubeconfigError {
    let place = match &error {
        kube::config::KubeconfigError::Parse(inner) => inner
            .location()
            .map(|at| format!(" at line {} column {}", at.line(), at.column())),
        _ => None,
    };
    KubeconfigError::new(
        "",
        format!(
            "not a kubeconfig: YAML that does not read as one{}",
            place.unwrap_or_default()
        ),
    )
}

fn check_user(index: usize, named: &NamedAuthInfo) -> Result<(), KubeconfigError> {
    let Some(user) = &named.auth_info else {
        return Ok(());
    };
    let field = |name: &str| format!("users[{index}].user.{name}");
    let refused: [(&str, bool, &str); 5] = [
        (
            "exec",
            user.exec.is_some(),
            "a credential plugin would run a command on the host; give a token or a client \
             certificate inline",
        ),
        (
            "auth-provider",
            user.auth_provider.is_some(),
            "an auth provider runs commands and refreshes tokens on the host; give a token \
             or a client certificate inline",
        ),
        (
            "tokenFile",
            user.token_file.is_some(),
            "a file path on the host is not accepted; give the token inline as token",
        ),
        (
            "client-certificate",
            user.client_certificate.is_some(),
            "a file path on the host is not accepted; give the certificate inline as \
             client-certificate-data (base64 PEM)",
        ),
        (
            "client-key",
            user.client_key.is_some(),
            "a file path on the host is not accepted; give the key inline as \
             client-key-data (base64 PEM)",
        ),
    ];
    match refused.into_iter().find(|(_, present, _)| *present) {
        Some((name, _, reason)) => Err(KubeconfigError::new(field(name), reason)),
        None => Ok(()),
    }
}

/// The current context's cluster and user, copied field by field from an
/// allow-list.
fn select(config: &Kubeconfig) -> Result<CheckedKubeconfig, KubeconfigError> {
    if config.clusters.is_empty() {
        return Err(KubeconfigError::new(
            "",
            "not a kubeconfig: it names no cluster",
        ));
    }
    let context = current_context(config)?;
    let Some(context_entry) = &context.context else {
        return Err(KubeconfigError::new(
            "contexts",
            format!("context {:?} names no cluster", context.name),
        ));
    };
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context_entry.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            KubeconfigError::new(
                "contexts",
                format!(
                    "context {:?} names cluster {:?}, which is not among its clusters",
                    context.name, context_entry.cluster
                ),
            )
        })?;
    let user = match &context_entry.user {
        Some(name) => config
            .auth_infos
            .iter()
            .find(|u| &u.name == name)
            .ok_or_else(|| {
                KubeconfigError::new(
                    "contexts",
                    format!(
                        "context {:?} names user {name:?}, which is not among its users",
                        context.name
                    ),
                )
            })?
            .auth_info
            .as_ref()
            .map(inline_credentials)
            .unwrap_or_default(),
        None => AuthInfo::default(),
    };
    let server_text = cluster.server.clone().unwrap_or_default();
    let server = ServerUrl::parse(&server_text)
        .map_err(|reason| KubeconfigError::new("clusters", reason))?;
    Ok(CheckedKubeconfig {
        server_text,
        server,
        namespace: context_entry.namespace.clone(),
        certificate_authority_data: cluster.certificate_authority_data.clone(),
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify.unwrap_or(false),
        tls_server_name: cluster.tls_server_name.clone(),
        proxy_url: cluster.proxy_url.clone(),
        user,
    })
}

/// The context a client would use: the current one, or the only one.
fn current_context(config: &Kubeconfig) -> Result<&NamedContext, KubeconfigError> {
    match &config.current_context {
        Some(name) => config
            .contexts
            .iter()
            .find(|c| &c.name == name)
            .ok_or_else(|| {
                KubeconfigError::new(
                    "current-context",
                    format!("names {name:?}, which is not among its contexts"),
                )
            }),
        None => match config.contexts.as_slice() {
            [only] => Ok(only),
            [] => Err(KubeconfigError::new(
                "",
                "not a kubeconfig: it has no context",
            )),
            _ => Err(KubeconfigError::new(
                "current-context",
                "it has several contexts and names none as current",
            )),
        },
    }
}

/// A user's inline credentials and nothing else: no command, no file.
fn inline_credentials(user: &AuthInfo) -> AuthInfo {
    AuthInfo {
        username: user.username.clone(),
        password: user.password.clone(),
        token: user.token.clone(),
        client_certificate_data: user.client_certificate_data.clone(),
        client_key_data: user.client_key_data.clone(),
        impersonate: user.impersonate.clone(),
        impersonate_groups: user.impersonate_groups.clone(),
        ..AuthInfo::default()
    }
}

#[cfg(test)]
mod tests;
