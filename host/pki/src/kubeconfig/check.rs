//! Reading a kubeconfig under a policy: every entry checked, then the
//! current context's cluster and user copied from an allow-list.

use kube::config::{AuthInfo, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

use super::checked::CheckedKubeconfig;
use super::error::KubeconfigError;
use super::policy::KubeconfigPolicy;
use super::server::ServerUrl;

impl KubeconfigPolicy {
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
