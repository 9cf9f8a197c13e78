//! The cluster PKI through a real `wasmco serve`, the chains checked with
//! x509-parser, and secrets at rest checked in the store's files.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use serde_json::{Value, json};
use x509_parser::prelude::*;

use crate::support::server::{Server, doc, expect, fixture, refused};

const CLUSTER: &str = "/v2/cluster-providers/edge/clusters/c1";

fn add_cluster(server: &Server, name: &str) {
    let _ = server.post("/v2/cluster-providers", doc("edge", json!({})));
    expect(
        server.upload(
            "/v2/cluster-providers/edge/clusters",
            doc(name, json!({})),
            Some(fixture("kubeconfig.yaml")),
        ),
        201,
    );
}

fn pem_der(pem: &str) -> Vec<u8> {
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("PEM");
    parsed.contents
}

/// Checks `cert` was signed by `ca`, is valid now, and returns its parts.
struct Checked {
    subject: String,
    organization: Option<String>,
    server_auth: bool,
    client_auth: bool,
    sans: Vec<String>,
    is_ca: bool,
    /// keyUsage: digitalSignature, keyEncipherment, keyCertSign.
    key_usage: (bool, bool, bool),
}

fn check(cert_pem: &str, ca_pem: &str) -> Checked {
    let cert_der = pem_der(cert_pem);
    let ca_der = pem_der(ca_pem);
    let (_, cert) = X509Certificate::from_der(&cert_der).unwrap();
    let (_, ca) = X509Certificate::from_der(&ca_der).unwrap();
    cert.verify_signature(Some(ca.public_key()))
        .expect("signed by the CA");
    assert_eq!(cert.issuer(), ca.subject());
    assert!(cert.validity().is_valid(), "valid now");
    let eku = cert.extended_key_usage().unwrap().map(|e| e.value.clone());
    let sans = cert
        .subject_alternative_name()
        .unwrap()
        .map(|s| {
            s.value
                .general_names
                .iter()
                .map(|n| match n {
                    GeneralName::DNSName(d) => d.to_string(),
                    GeneralName::IPAddress(ip) => match ip.len() {
                        4 => std::net::Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]).to_string(),
                        _ => format!("{ip:?}"),
                    },
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .unwrap_or_default();
    Checked {
        subject: cert
            .subject()
            .iter_common_name()
            .next()
            .map(|c| c.as_str().unwrap().to_owned())
            .unwrap_or_default(),
        organization: cert
            .subject()
            .iter_organization()
            .next()
            .map(|o| o.as_str().unwrap().to_owned()),
        server_auth: eku.as_ref().is_some_and(|e| e.server_auth),
        client_auth: eku.as_ref().is_some_and(|e| e.client_auth),
        sans,
        is_ca: cert.is_ca(),
        key_usage: cert
            .key_usage()
            .unwrap()
            .map(|k| {
                (
                    k.value.digital_signature(),
                    k.value.key_encipherment(),
                    k.value.key_cert_sign(),
                )
            })
            .unwrap_or_default(),
    }
}

fn post_raw(server: &Server, path: &str, body: Value) -> reqwest::blocking::Response {
    server.post(path, body)
}

#[test]
fn cluster_ca_admin_kubeconfig_bundle_and_csr() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    add_cluster(&server, "c1");
    refused(server.get(&format!("{CLUSTER}/ca")), 404, None, "no CA yet");
    let ca = expect(
        server
            .client
            .post(server.url(&format!("{CLUSTER}/ca")))
            .send()
            .unwrap(),
        201,
    )["certificate"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!ca.contains("PRIVATE KEY"));
    refused(
        server.post(&format!("{CLUSTER}/ca"), json!({})),
        400,
        Some("body"),
        "certificate",
    );
    let again = server
        .client
        .post(server.url(&format!("{CLUSTER}/ca")))
        .send()
        .unwrap();
    refused(again, 409, None, "already has a CA");
    assert_eq!(
        expect(server.get(&format!("{CLUSTER}/ca")), 200)["certificate"],
        ca.as_str()
    );

    // admin.kubeconfig: loads with kube's type, client cert in system:masters from this CA.
    let kubeconfig_of = |server: &Server| {
        let response = post_raw(
            server,
            &format!("{CLUSTER}/admin-kubeconfig"),
            json!({"server": "https://10.0.0.5:6443"}),
        );
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "application/yaml");
        let yaml = response.text().unwrap();
        let config = kube::config::Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
        let cluster = config.clusters[0].cluster.clone().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://10.0.0.5:6443"));
        let auth = config.auth_infos[0].auth_info.clone().unwrap();
        use base64::Engine;
        let decode = |data: &str| {
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap(),
            )
            .unwrap()
        };
        let ca_in_config = decode(cluster.certificate_authority_data.as_deref().unwrap());
        assert_eq!(ca_in_config, ca);
        decode(auth.client_certificate_data.as_deref().unwrap())
    };
    let first = kubeconfig_of(&server);
    let admin = check(&first, &ca);
    assert_eq!(admin.subject, "kubernetes-admin");
    assert_eq!(admin.organization.as_deref(), Some("system:masters"));
    assert!(admin.client_auth && !admin.server_auth && !admin.is_ca);
    assert_eq!(admin.key_usage, (true, true, false));
    // Re-issuing gives a new certificate from the same CA.
    let second = kubeconfig_of(&server);
    assert_ne!(first, second);
    check(&second, &ca);
    refused(
        post_raw(
            &server,
            &format!("{CLUSTER}/admin-kubeconfig"),
            json!({"server": "http://x"}),
        ),
        422,
        Some("server"),
        "https://",
    );

    // The kubeadm certificate set.
    let response = post_raw(
        &server,
        &format!("{CLUSTER}/bootstrap-bundle"),
        json!({"node": "m1", "sans": ["10.0.0.5", "m1.example"]}),
    );
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/gzip");
    let mut files: BTreeMap<String, (String, u32)> = BTreeMap::new();
    let gzipped = response.bytes().unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(gzipped.as_ref()));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mode = entry.header().mode().unwrap();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(name, (text, mode));
    }
    let mut expected: Vec<String> = [
        "ca",
        "front-proxy-ca",
        "etcd/ca",
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-client",
        "etcd/server",
        "etcd/peer",
        "etcd/healthcheck-client",
        "apiserver-etcd-client",
    ]
    .iter()
    .flat_map(|n| [format!("{n}.crt"), format!("{n}.key")])
    .chain(["sa.key".to_owned(), "sa.pub".to_owned()])
    .collect();
    expected.sort();
    assert_eq!(files.keys().cloned().collect::<Vec<_>>(), expected);
    assert!(
        files
            .iter()
            .filter(|(n, _)| n.ends_with(".key"))
            .all(|(_, (_, mode))| mode & 0o777 == 0o600)
    );
    let file = |name: &str| files[name].0.clone();
    assert_eq!(file("ca.crt"), ca);
    let apiserver = check(&file("apiserver.crt"), &ca);
    assert_eq!(apiserver.subject, "kube-apiserver");
    assert!(apiserver.server_auth && !apiserver.client_auth);
    for san in [
        "10.0.0.5",
        "m1.example",
        "kubernetes.default",
        "m1",
        "10.96.0.1",
    ] {
        assert!(
            apiserver.sans.contains(&san.to_owned()),
            "{san} in {:?}",
            apiserver.sans
        );
    }
    let kubelet_client = check(&file("apiserver-kubelet-client.crt"), &ca);
    assert!(kubelet_client.client_auth && !kubelet_client.server_auth);
    assert!(check(&file("front-proxy-client.crt"), &file("front-proxy-ca.crt")).client_auth);
    for etcd in ["etcd/server.crt", "etcd/peer.crt"] {
        let cert = check(&file(etcd), &file("etcd/ca.crt"));
        assert!(cert.server_auth && cert.client_auth, "{etcd}");
        assert!(
            cert.sans.contains(&"127.0.0.1".to_owned())
                && cert.sans.contains(&"m1.example".to_owned())
        );
    }
    for client in ["etcd/healthcheck-client.crt", "apiserver-etcd-client.crt"] {
        let cert = check(&file(client), &file("etcd/ca.crt"));
        assert!(cert.client_auth && !cert.server_auth, "{client}");
    }
    let front_proxy_ca = check(&file("front-proxy-ca.crt"), &file("front-proxy-ca.crt"));
    assert!(front_proxy_ca.is_ca && front_proxy_ca.key_usage.2);
    assert_eq!(apiserver.key_usage, (true, true, false));
    assert!(file("sa.pub").contains("PUBLIC KEY") && file("sa.key").contains("PRIVATE KEY"));
    KeyPair::from_pem(&file("apiserver.key")).expect("the key parses");
    refused(
        post_raw(
            &server,
            &format!("{CLUSTER}/bootstrap-bundle"),
            json!({"node": "m1", "sans": ["bad name!"]}),
        ),
        422,
        Some("sans"),
        "bad name!",
    );

    // Node CSRs.
    let csr = |cn: &str, org: &str, eku: Vec<ExtendedKeyUsagePurpose>, sans: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
        params.extended_key_usages = eku;
        params.serialize_request(&key).unwrap().pem().unwrap()
    };
    let sign = |csr: String| post_raw(&server, &format!("{CLUSTER}/csr"), json!({"csr": csr}));
    let client = expect(
        sign(csr("system:node:n1", "system:nodes", vec![], vec![])),
        200,
    );
    let client = check(client["certificate"].as_str().unwrap(), &ca);
    assert_eq!(
        (client.subject.as_str(), client.organization.as_deref()),
        ("system:node:n1", Some("system:nodes"))
    );
    assert!(client.client_auth && !client.server_auth);
    let serving = expect(
        sign(csr(
            "system:node:n1",
            "system:nodes",
            vec![ExtendedKeyUsagePurpose::ServerAuth],
            vec!["n1.example".into()],
        )),
        200,
    );
    let serving = check(serving["certificate"].as_str().unwrap(), &ca);
    assert!(serving.server_auth && !serving.client_auth);
    assert_eq!(serving.sans, ["n1.example"]);
    refused(
        sign(csr("admin", "system:nodes", vec![], vec![])),
        422,
        Some("csr"),
        "system:node:NAME",
    );
    refused(
        sign(csr("system:node:n1", "system:masters", vec![], vec![])),
        422,
        Some("csr"),
        "system:nodes",
    );
    refused(
        sign(csr(
            "system:node:n1",
            "system:nodes",
            vec![ExtendedKeyUsagePurpose::ServerAuth],
            vec![],
        )),
        422,
        Some("csr"),
        "SANs",
    );
    refused(
        sign(csr(
            "system:node:n1",
            "system:nodes",
            vec![ExtendedKeyUsagePurpose::CodeSigning],
            vec![],
        )),
        422,
        Some("csr"),
        "only client or server",
    );
    refused(sign("not a csr".into()), 422, Some("csr"), "PEM");
}

#[test]
fn an_imported_ca_is_checked_and_used() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    add_cluster(&server, "c2");
    let path = "/v2/cluster-providers/edge/clusters/c2";
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "corporate-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).unwrap().pem();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["x.example".to_owned()])
        .unwrap()
        .self_signed(&leaf_key)
        .unwrap()
        .pem();
    let other_key = KeyPair::generate().unwrap().serialize_pem();

    refused(
        server.post(
            &format!("{path}/ca"),
            json!({"certificate": ca, "key": other_key}),
        ),
        422,
        Some("key"),
        "does not belong",
    );
    refused(
        server.post(
            &format!("{path}/ca"),
            json!({"certificate": leaf, "key": leaf_key.serialize_pem()}),
        ),
        422,
        Some("certificate"),
        "not a CA",
    );
    expect(
        server.post(
            &format!("{path}/ca"),
            json!({"certificate": ca, "key": ca_key.serialize_pem()}),
        ),
        201,
    );
    assert_eq!(
        expect(server.get(&format!("{path}/ca")), 200)["certificate"],
        ca.as_str()
    );
    let response = server.post(
        &format!("{path}/admin-kubeconfig"),
        json!({"server": "https://c2:6443"}),
    );
    let yaml = response.text().unwrap();
    let config = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    use base64::Engine;
    let cert = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(
                config.auth_infos[0]
                    .auth_info
                    .as_ref()
                    .unwrap()
                    .client_certificate_data
                    .as_ref()
                    .unwrap(),
            )
            .unwrap(),
    )
    .unwrap();
    check(&cert, &ca);
}

/// Every file of the store (sled's, or the test's etcd's), concatenated.
fn store_bytes(data_dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    let etcd = data_dir.join("etcd");
    let mut stack = vec![if etcd.is_dir() {
        etcd
    } else {
        data_dir.join("db")
    }];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                all.extend(std::fs::read(path).unwrap());
            }
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn secrets_are_sealed_and_a_wrong_master_key_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let key_a = "11".repeat(32);
    let key_b = "22".repeat(32);
    let server = Server::start_with_env(dir.path(), &[], &[("WASMCO_MASTER_KEY", &key_a)]);
    add_cluster(&server, "c1");
    expect(
        server
            .client
            .post(server.url(&format!("{CLUSTER}/ca")))
            .send()
            .unwrap(),
        201,
    );
    let bundle = server.post(
        &format!("{CLUSTER}/bootstrap-bundle"),
        json!({"node": "m1"}),
    );
    assert_eq!(bundle.status(), 200);
    server.kill();

    let stored = store_bytes(dir.path());
    assert!(
        !contains(&stored, b"PRIVATE KEY"),
        "a PEM private key is in the store"
    );
    assert!(
        !contains(&stored, b"s3cr3t-t0ken-never-returned"),
        "a kubeconfig credential is in the store"
    );
    assert!(
        !dir.path().join("master.key").exists(),
        "the key came from the environment"
    );

    let run = |key: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wasmco"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .env_remove("WASMCO_MASTER_KEY");
        if let Some(key) = key {
            command.env("WASMCO_MASTER_KEY", key);
        }
        command.output().unwrap()
    };
    for (key, words) in [
        (
            Some(key_b.as_str()),
            "not the one this data directory was sealed with",
        ),
        (None, "no master key"),
        (Some("abc"), "not 64 hex digits"),
    ] {
        let output = run(key);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(words), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(
        store_bytes(dir.path()),
        stored,
        "a refused start changed the store"
    );

    let server = Server::start_with_env(dir.path(), &[], &[("WASMCO_MASTER_KEY", &key_a)]);
    expect(server.get(&format!("{CLUSTER}/ca")), 200);
    let response = server.post(
        &format!("{CLUSTER}/admin-kubeconfig"),
        json!({"server": "https://c1:6443"}),
    );
    assert_eq!(response.status(), 200);
}

#[test]
fn a_virtual_cluster_with_the_cluster_ca_accepts_its_admin_certificate_only() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    add_cluster(&server, "c1");
    add_cluster(&server, "c2");
    for cluster in ["c1", "c2"] {
        let path = format!("/v2/cluster-providers/edge/clusters/{cluster}/ca");
        expect(server.client.post(server.url(&path)).send().unwrap(), 201);
    }
    // The cluster's API server certificate comes from its bootstrap bundle.
    let bundle = server
        .post(
            &format!("{CLUSTER}/bootstrap-bundle"),
            json!({"node": "m1", "sans": ["127.0.0.1"]}),
        )
        .bytes()
        .unwrap();
    let mut files = BTreeMap::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bundle.as_ref()));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(name, text);
    }
    let identity = wasmco_pki::KeyedCert {
        certificate: files["apiserver.crt"].clone(),
        key: files["apiserver.key"].clone(),
    };
    let tls = wasmco_pki::rustls_server(&identity, Some(&files["ca.crt"])).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let cluster = runtime
        .block_on(wasmco_vcluster::VirtualCluster::start_tls(
            "c1",
            "127.0.0.1:0".parse().unwrap(),
            Default::default(),
            tls,
        ))
        .unwrap();
    let api = format!("https://{}", cluster.addr());
    let kubeconfig = |cluster: &str| {
        let yaml = server
            .post(
                &format!("/v2/cluster-providers/edge/clusters/{cluster}/admin-kubeconfig"),
                json!({"server": api}),
            )
            .text()
            .unwrap();
        kube::config::Kubeconfig::from_yaml(&yaml).unwrap()
    };
    let reach = |config: kube::config::Kubeconfig| {
        runtime.block_on(async {
            let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
                .await
                .unwrap();
            kube::Client::try_from(config)
                .unwrap()
                .apiserver_version()
                .await
        })
    };
    reach(kubeconfig("c1")).expect("the admin certificate of c1's CA is accepted");
    // c2's admin certificate, trusting c1's server: refused in the handshake.
    let mut foreign = kubeconfig("c2");
    let own = kubeconfig("c1");
    foreign.clusters[0].cluster = own.clusters[0].cluster.clone();
    let error = reach(foreign).expect_err("a certificate from another CA is refused");
    assert!(!error.to_string().is_empty());
    drop(cluster);
}
