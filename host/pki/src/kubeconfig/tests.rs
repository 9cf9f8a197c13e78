use std::net::Ipv4Addr;

use ipnet::IpNet;

use super::*;

fn kubeconfig(cluster: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster}\nusers:\n- name: u\n  user:\n{user}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
    )
}

fn server(url: &str) -> String {
    kubeconfig(&format!("    server: {url}"), "    token: t")
}

fn refused(policy: &KubeconfigPolicy, yaml: &str) -> KubeconfigError {
    policy
        .check(yaml.as_bytes())
        .expect_err("the kubeconfig should be refused")
}

#[test]
fn commands_and_host_files_are_refused_by_field() {
    let policy = KubeconfigPolicy::default();
    let https = "    server: https://10.0.0.5:6443";
    for (user, field) in [
        (
            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/x']}",
            "users[0].user.exec",
        ),
        (
            "    auth-provider: {name: gcp, config: {cmd-path: /bin/sh}}",
            "users[0].user.auth-provider",
        ),
        ("    tokenFile: /etc/shadow", "users[0].user.tokenFile"),
        (
            "    client-certificate: /etc/ssl/c.pem",
            "users[0].user.client-certificate",
        ),
        ("    client-key: /etc/ssl/k.pem", "users[0].user.client-key"),
    ] {
        let error = refused(&policy, &kubeconfig(https, user));
        assert_eq!(error.field, field, "{error}");
    }
    let error = refused(
        &policy,
        &kubeconfig(
            "    server: https://10.0.0.5\n    certificate-authority: /etc/ca.pem",
            "    token: t",
        ),
    );
    assert_eq!(error.field, "clusters[0].cluster.certificate-authority");
}

#[test]
fn every_entry_is_checked_not_only_the_current_one() {
    let yaml = server("https://10.0.0.5").replace(
        "users:\n- name: u\n  user:\n    token: t\n",
        "users:\n- name: u\n  user:\n    token: t\n- name: spare\n  user:\n    exec: {command: /bin/true}\n",
    );
    let error = refused(&KubeconfigPolicy::default(), &yaml);
    assert_eq!(error.field, "users[1].user.exec");
}

#[test]
fn servers_must_be_https_or_loopback_http() {
    let policy = KubeconfigPolicy::default();
    for url in [
        "https://10.0.0.5:6443",
        "https://api.example.com",
        "http://127.0.0.1:9016",
        "http://[::1]:80",
        "http://localhost:8080/prefix",
    ] {
        policy
            .check(server(url).as_bytes())
            .unwrap_or_else(|e| panic!("{url}: {e}"));
    }
    for url in [
        "file:///etc/passwd",
        "http://10.0.0.5",
        "ftp://a",
        "unix:///var/run/x",
        "https://user:pw@10.0.0.5",
        "10.0.0.5:6443",
    ] {
        let error = refused(&policy, &server(url));
        assert_eq!(error.field, "clusters[0].cluster.server", "{url}: {error}");
    }
}

#[test]
fn metadata_link_local_and_unspecified_servers_are_refused() {
    let policy = KubeconfigPolicy::default();
    for url in [
        "https://169.254.169.254",
        "https://169.254.169.254.",
        "https://[::ffff:169.254.169.254]",
        "https://[::ffff:a9fe:a9fe]:443",
        "https://[::169.254.169.254]",
        "https://[64:ff9b::169.254.169.254]",
        "https://[2002:a9fe:a9fe::1]",
        "https://[fe80::1]",
        "https://[fd00:ec2::254]",
        "https://0.0.0.0:6443",
        "https://[::]:6443",
        "https://100.100.100.200",
        "https://2852039166",
        "https://0xa9.0xfe.0xa9.0xfe",
        "https://0251.0376.0251.0376",
        "https://169.254.43518",
        "https://metadata.google.internal",
        "https://METADATA.google.internal.",
    ] {
        let error = refused(&policy, &server(url));
        assert_eq!(error.field, "clusters[0].cluster.server", "{url}: {error}");
    }
}

#[test]
fn flags_deny_more_networks_and_allow_some_back() {
    let net = |s: &str| s.parse::<IpNet>().unwrap();
    let policy = KubeconfigPolicy::new(
        false,
        &[net("10.0.0.0/8")],
        &[net("10.1.0.0/16"), net("169.254.10.0/24")],
    );
    assert!(!policy.allows("10.2.0.1".parse().unwrap()));
    assert!(policy.allows("10.1.2.3".parse().unwrap()));
    assert!(policy.allows("169.254.10.7".parse().unwrap()));
    assert!(!policy.allows("169.254.169.254".parse().unwrap()));
    assert!(!policy.allows("::ffff:10.2.0.1".parse().unwrap()));
    assert!(policy.allows("192.168.1.1".parse().unwrap()));
}

#[test]
fn proxies_need_the_flag_and_are_reported() {
    let yaml = kubeconfig(
        "    server: https://10.0.0.5\n    proxy-url: socks5://10.9.9.9:1080",
        "    token: t",
    );
    let error = refused(&KubeconfigPolicy::default(), &yaml);
    assert_eq!(error.field, "clusters[0].cluster.proxy-url");
    let checked = KubeconfigPolicy::new(true, &[], &[])
        .check(yaml.as_bytes())
        .unwrap();
    assert!(checked.warnings()[0].starts_with("proxy-url"));
}

#[test]
fn insecure_skip_tls_verify_is_accepted_with_a_warning() {
    let yaml = kubeconfig(
        "    server: https://10.0.0.5\n    insecure-skip-tls-verify: true",
        "    token: t",
    );
    let checked = KubeconfigPolicy::default().check(yaml.as_bytes()).unwrap();
    assert_eq!(checked.warnings().len(), 1);
    assert!(checked.warnings()[0].starts_with("insecure-skip-tls-verify"));
    let clean = KubeconfigPolicy::default()
        .check(server("https://10.0.0.5").as_bytes())
        .unwrap();
    assert!(clean.warnings().is_empty());
}

#[test]
fn contexts_must_resolve() {
    let policy = KubeconfigPolicy::default();
    let no_context =
        server("https://10.0.0.5").replace("current-context: x\n", "current-context: y\n");
    assert_eq!(refused(&policy, &no_context).field, "current-context");
    let missing_user = server("https://10.0.0.5").replace("user: u}", "user: nobody}");
    assert_eq!(refused(&policy, &missing_user).field, "contexts");
    let only_context = server("https://10.0.0.5").replace("current-context: x\n", "");
    policy.check(only_context.as_bytes()).unwrap();
    assert_eq!(refused(&policy, "clusters: []").field, "");
    assert_eq!(refused(&policy, "[1, 2]").field, "");
    assert_eq!(refused(&policy, "\u{0}\u{ff}").field, "");
}

#[tokio::test]
async fn a_client_config_holds_only_inline_credentials() {
    let ca = crate::new_ca("test").unwrap();
    use base64::Engine;
    let ca_data = base64::engine::general_purpose::STANDARD.encode(&ca.certificate);
    let yaml = kubeconfig(
        &format!("    server: https://127.0.0.1:6443\n    certificate-authority-data: {ca_data}"),
        "    token: inline-token",
    );
    let policy = KubeconfigPolicy::default();
    let checked = policy.check(yaml.as_bytes()).unwrap();
    let config = checked.client_config(&policy).await.unwrap();
    assert_eq!(config.root_cert.as_ref().map(Vec::len), Some(1));
    assert!(config.auth_info.exec.is_none());
    assert!(config.auth_info.token_file.is_none());
    assert!(config.auth_info.token.is_some());
    assert!(config.root_cert_file.is_none());
    assert!(config.proxy_url.is_none());
}

#[tokio::test]
async fn a_tighter_policy_at_client_time_refuses_what_upload_accepted() {
    let yaml = server("https://10.0.0.5");
    let checked = KubeconfigPolicy::default().check(yaml.as_bytes()).unwrap();
    let tighter = KubeconfigPolicy::new(false, &["10.0.0.0/8".parse().unwrap()], &[]);
    let error = checked.client_config(&tighter).await.unwrap_err();
    assert_eq!(error.field, "server");
}

#[tokio::test]
async fn a_name_resolving_into_a_denied_network_is_refused_at_client_time() {
    // localhost resolves to loopback; denying loopback stands in for a name
    // that resolves to the metadata address.
    let yaml = server("https://localhost:6443");
    let policy = KubeconfigPolicy::new(
        false,
        &["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        &[],
    );
    let checked = policy.check(yaml.as_bytes()).unwrap();
    let error = checked.client_config(&policy).await.unwrap_err();
    assert!(error.reason.contains("resolves to"), "{error}");
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("token: t".to_owned()),
            Just("tokenFile: /etc/x".to_owned()),
            Just("exec: {command: /bin/sh}".to_owned()),
            Just("auth-provider: {name: gcp}".to_owned()),
            Just("client-certificate: /x".to_owned()),
            Just("client-key: /x".to_owned()),
            Just("client-key-data: eA==".to_owned()),
            Just("username: u".to_owned()),
            "[a-z-]{1,12}: [a-z0-9/]{0,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any bytes: an answer, never a panic.
        #[test]
        fn any_bytes_are_checked_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = KubeconfigPolicy::default().check(&bytes);
        }

        /// Whatever a user entry holds, an accepted kubeconfig carries no
        /// command and names no file.
        #[test]
        fn nothing_accepted_runs_or_reads(fields in proptest::collection::vec(field(), 0..6), host in "[a-z0-9.:\\[\\]]{1,24}", scheme in "(https?|file|ftp)") {
            let user: String = fields.iter().map(|f| format!("    {f}\n")).collect();
            let yaml = kubeconfig(&format!("    server: {scheme}://{host}"), &user);
            if let Ok(checked) = KubeconfigPolicy::default().check(yaml.as_bytes()) {
                prop_assert!(!yaml.contains("exec:") && !yaml.contains("auth-provider:"));
                prop_assert!(!yaml.contains("tokenFile:") && !yaml.contains("client-key:") && !yaml.contains("client-certificate:"));
                prop_assert!(checked.user.exec.is_none() && checked.user.token_file.is_none());
                prop_assert!(scheme == "https" || scheme == "http");
            }
        }

        /// No spelling of a denied IPv4 address in IPv6 gets through.
        #[test]
        fn ipv6_spellings_of_denied_addresses_are_denied(last in any::<u16>()) {
            let policy = KubeconfigPolicy::default();
            let metadata = Ipv4Addr::new(169, 254, (last >> 8) as u8, last as u8);
            prop_assert!(!policy.allows(metadata.into()));
            prop_assert!(!policy.allows(metadata.to_ipv6_mapped().into()));
            prop_assert!(!policy.allows(metadata.to_ipv6_compatible().into()));
        }
    }
}
