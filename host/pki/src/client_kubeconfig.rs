//! Client kubeconfigs, built as typed values and serialised, never as
//! text.

use kube::config::{AuthInfo, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

use crate::cert::KeyedCert;

/// A client kubeconfig for `server` trusting `ca_pem`, as YAML.
pub fn kubeconfig(
    cluster: &str,
    server: &str,
    ca_pem: &str,
    user: &str,
    client: &KeyedCert,
) -> String {
    let trust = kube::config::Cluster {
        server: Some(server.into()),
        certificate_authority_data: Some(base64_encode(ca_pem.as_bytes())),
        ..kube::config::Cluster::default()
    };
    client_kubeconfig(cluster, trust, user, client, None)
}

/// A kubeconfig for `user` with `client`'s certificate on `cluster` (its
/// server and trust), in `namespace` when given, as YAML.
pub(crate) fn client_kubeconfig(
    cluster: &str,
    trust: kube::config::Cluster,
    user: &str,
    client: &KeyedCert,
    namespace: Option<&str>,
) -> String {
    let context = format!("{user}@{cluster}");
    let config = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: cluster.into(),
            cluster: Some(trust),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: user.into(),
            auth_info: Some(AuthInfo {
                client_certificate_data: Some(base64_encode(client.certificate.as_bytes())),
                client_key_data: Some(base64_encode(client.key.as_bytes()).into()),
                ..AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: context.clone(),
            context: Some(Context {
                cluster: cluster.into(),
                user: Some(user.into()),
                namespace: namespace.map(str::to_owned),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(context),
        ..Kubeconfig::default()
    };
    // Built as values, not text: a `server` holding a newline stays one
    // value. Serialising plain strings into YAML cannot fail.
    serde_norway::to_string(&config).unwrap_or_default()
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert::Usage;
    use crate::issue::{issue, new_ca};

    #[test]
    fn a_kubeconfig_is_built_as_values_so_no_input_adds_a_field() {
        let ca = new_ca("c").unwrap();
        let client = issue(&ca, "u", &[], &[], Usage::Client).unwrap();
        let server = "https://10.0.0.5:6443\n    tokenFile: /etc/shadow";
        let yaml = kubeconfig("c", server, &ca.certificate, "u: x", &client);
        let config = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let cluster = config.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some(server));
        let user = config.auth_infos[0].auth_info.as_ref().unwrap();
        assert!(user.token_file.is_none());
        assert_eq!(config.auth_infos[0].name, "u: x");
        assert_eq!(config.current_context.as_deref(), Some("u: x@c"));
    }
}
