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

use std::net::{IpAddr, Ipv4Addr};

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

/// A kubeconfig that passed [`KubeconfigPolicy::check`]: the current
/// context's server, CA and inline credentials.
#[derive(Debug, Clone)]
pub struct CheckedKubeconfig {
    server_text: String,
    server: ServerUrl,
    namespace: Option<String>,
    certificate_authority_data: Option<String>,
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
    user: AuthInfo,
}

impl CheckedKubeconfig {
    /// The API server's URL as the kubeconfig gives it.
    pub fn server(&self) -> &str {
        &self.server_text
    }

    /// The CA to trust (base64 PEM), when given.
    pub fn certificate_authority_data(&self) -> Option<&str> {
        self.certificate_authority_data.as_deref()
    }

    /// What is accepted but worth an operator's attention.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.insecure_skip_tls_verify {
            warnings.push(
                "insecure-skip-tls-verify: the API server's certificate is not verified, so \
                 anyone between this host and the cluster can read its credentials"
                    .to_owned(),
            );
        }
        if self.proxy_url.is_some() {
            warnings.push("proxy-url: the cluster is reached through a proxy".to_owned());
        }
        warnings
    }

    /// The kube-rs client configuration, after the policy is checked again
    /// (it may have changed since upload) and the server's name is resolved
    /// and every address it has is checked.
    pub async fn client_config(
        &self,
        policy: &KubeconfigPolicy,
    ) -> Result<kube::Config, KubeconfigError> {
        let field = "server";
        policy
            .check_host(&self.server.host)
            .map_err(|reason| KubeconfigError::new(field, reason))?;
        if self.proxy_url.is_some() && !policy.allow_proxy {
            return Err(KubeconfigError::new(
                "proxy-url",
                "proxies are refused on this server",
            ));
        }
        if let Host::Name(name) = &self.server.host {
            let addresses = tokio::net::lookup_host((name.as_str(), self.server.port))
                .await
                .map_err(|e| KubeconfigError::new(field, format!("cannot resolve {name}: {e}")))?;
            for address in addresses {
                if !policy.allows(address.ip()) {
                    return Err(KubeconfigError::new(
                        field,
                        format!(
                            "{name} resolves to {}, in a network this server does not reach",
                            address.ip()
                        ),
                    ));
                }
            }
        }
        let url = self
            .server_text
            .parse::<http::Uri>()
            .map_err(|e| KubeconfigError::new(field, e.to_string()))?;
        let mut config = kube::Config::new(url);
        config.default_namespace = self
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        config.root_cert = self
            .certificate_authority_data
            .as_deref()
            .map(der_certificates)
            .transpose()?;
        config.accept_invalid_certs = self.insecure_skip_tls_verify;
        config.tls_server_name = self.tls_server_name.clone();
        config.proxy_url = self
            .proxy_url
            .as_deref()
            .map(|p| p.parse::<http::Uri>())
            .transpose()
            .map_err(|e| KubeconfigError::new("proxy-url", e.to_string()))?;
        config.auth_info = self.user.clone();
        Ok(config)
    }
}

/// A cluster's `status`: the server its kubeconfig names and what is
/// accepted but worth a warning; an error when the kubeconfig is refused.
pub fn cluster_status(
    policy: &KubeconfigPolicy,
    kubeconfig: &[u8],
) -> Result<serde_json::Value, KubeconfigError> {
    let checked = policy.check(kubeconfig)?;
    Ok(serde_json::json!({
        "kubeconfig": {"server": checked.server(), "warnings": checked.warnings()}
    }))
}

/// The DER certificates of a base64 PEM bundle.
fn der_certificates(base64_pem: &str) -> Result<Vec<Vec<u8>>, KubeconfigError> {
    use base64::Engine;
    let field = "certificate-authority-data";
    let pem = base64::engine::general_purpose::STANDARD
        .decode(base64_pem.trim())
        .map_err(|e| KubeconfigError::new(field, format!("not base64: {e}")))?;
    let certificates: Vec<Vec<u8>> =
        <rustls::pki_types::CertificateDer as rustls::pki_types::pem::PemObject>::pem_slice_iter(
            &pem,
        )
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<_, _>>()
        .map_err(|e| KubeconfigError::new(field, format!("not PEM certificates: {e:?}")))?;
    if certificates.is_empty() {
        return Err(KubeconfigError::new(field, "holds no certificate"));
    }
    Ok(certificates)
}

/// The host part of a server URL.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    Name(String),
}

/// A server URL: `https://`, or `http://` to a loopback address only.
#[derive(Debug, Clone)]
struct ServerUrl {
    host: Host,
    port: u16,
}

impl ServerUrl {
    fn parse(text: &str) -> Result<ServerUrl, String> {
        let uri: http::Uri = text.parse().map_err(|e| format!("not a URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(
                    "the server must be an https:// URL (http:// only for a loopback address)"
                        .to_owned(),
                );
            }
        };
        let authority = uri.authority().ok_or("the URL names no host")?;
        if authority.as_str().contains('@') {
            return Err("credentials in the URL are not accepted".to_owned());
        }
        let host_text = authority.host();
        let bare = host_text.trim_start_matches('[').trim_end_matches(']');
        // `169.254.169.254.` resolves as the address itself.
        let bare = bare.strip_suffix('.').unwrap_or(bare);
        let host = match bare.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) if looks_numeric(bare) => {
                return Err(format!(
                    "{bare} is an IP address in a non-standard form; write it in dotted \
                     decimal"
                ));
            }
            Err(_) => Host::Name(bare.to_ascii_lowercase()),
        };
        if !https {
            let loopback = match &host {
                Host::Ip(ip) => ip.to_canonical().is_loopback(),
                Host::Name(name) => name == "localhost",
            };
            if !loopback {
                return Err(
                    "http:// is only for a loopback address (a virtual cluster on this \
                     machine); use https://"
                        .to_owned(),
                );
            }
        }
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(ServerUrl { host, port })
    }
}

/// Whether a host name is one of the numeric spellings of an IPv4 address
/// that the system resolver accepts (`2852039166`, `0xa9.0xfe.0xa9.0xfe`,
/// `0251.0376.0251.0376`, `169.254.43518`), which would bypass the network
/// check.
fn looks_numeric(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|part| {
            let digits = part
                .strip_prefix("0x")
                .or_else(|| part.strip_prefix("0X"))
                .map(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()));
            digits.unwrap_or(!part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
        })
}

/// An address and every IPv4 address it embeds.
fn embedded_addresses(address: IpAddr) -> Vec<IpAddr> {
    let mut all = vec![address];
    if let IpAddr::V6(v6) = address {
        let octets = v6.octets();
        let segments = v6.segments();
        let tail = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
        // ::ffff:a.b.c.d, and the deprecated ::a.b.c.d (but not :: or ::1).
        if let Some(v4) = v6.to_ipv4_mapped() {
            all.push(v4.into());
        } else if segments[..6] == [0; 6] && !matches!(segments[6..], [0, 0] | [0, 1]) {
            all.push(tail.into());
        }
        // NAT64, 64:ff9b::a.b.c.d.
        if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
            all.push(tail.into());
        }
        // 6to4, 2002:AABB:CCDD::.
        if segments[0] == 0x2002 {
            all.push(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]).into());
        }
    }
    all
}

#[cfg(test)]
mod tests;
