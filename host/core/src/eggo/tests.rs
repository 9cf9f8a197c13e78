use super::*;

const FIXTURES: [(&str, &str); 4] = [
    (
        "all_offline_install.config",
        include_str!("../../../../tests/fixtures/eggo/all_offline_install.config"),
    ),
    (
        "all_online_install.config",
        include_str!("../../../../tests/fixtures/eggo/all_online_install.config"),
    ),
    (
        "centos.config",
        include_str!("../../../../tests/fixtures/eggo/centos.config"),
    ),
    (
        "openEuler.config",
        include_str!("../../../../tests/fixtures/eggo/openEuler.config"),
    ),
];

fn round_trips(config: &DeployConfig) {
    let text = to_yaml(config).unwrap();
    assert_eq!(&parse(&text).unwrap(), config, "{text}");
}

/// Asserts `config` is refused at `field`, the message naming it.
fn refused(config: &DeployConfig, field: &str) {
    let problems = config.check();
    assert!(
        problems
            .iter()
            .any(|p| p.field == field && p.to_string().starts_with(&format!("{field}: "))),
        "no problem at {field}: {problems:?}"
    );
}

/// Asserts `text` does not parse, the refusal naming `field`.
fn unparsed(text: &str, field: &str, reason: &str) {
    let error = parse(text).unwrap_err();
    assert_eq!(error.field, field, "{error}");
    assert!(error.to_string().contains(reason), "{error}");
}

#[test]
fn eggo_example_configs_parse_check_clean_and_round_trip() {
    for (name, text) in FIXTURES {
        let config = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(config.check(), vec![], "{name}");
        round_trips(&config);
    }
}

#[test]
fn examples_read_as_eggo_reads_them() {
    let offline = parse(FIXTURES[0].1).unwrap();
    assert_eq!(offline.cluster_id, "offline");
    assert_eq!(offline.workers[1].name, "worker1");
    assert_eq!(offline.install.network[0].dst, "/opt/cni/bin");
    assert_eq!(offline.install.dns[0].kind, PackageType::Bin);
    let source = offline.install.package_source.as_ref().unwrap();
    assert_eq!(source.srcpath.len(), 2);
    assert_eq!(offline.open_ports.worker[1].port, 179);
    let online = parse(FIXTURES[1].1).unwrap();
    assert_eq!(online.install.container[0].kind, PackageType::Repo);
    assert!(
        online.install.addition.master[0]
            .name
            .starts_with("https://")
    );
}

#[test]
fn template_round_trips_and_checks_clean() {
    let template = template();
    assert_eq!(template.check(), vec![]);
    round_trips(&template);
    let text = to_yaml(&template).unwrap();
    assert!(text.contains("cluster-id: k8s-cluster"), "{text}");
    assert!(
        text.contains("apiserver-endpoint: 192.168.0.1:8443"),
        "{text}"
    );
    assert_eq!(
        template.install.addition.master[0].timeout_or_default(),
        "30s"
    );
    assert_eq!(
        template.install.addition.worker[0].timeout_or_default(),
        DEFAULT_SHELL_TIMEOUT
    );
}

#[test]
fn unknown_keys_are_refused_with_their_path() {
    let text = "install:\n  etcd:\n  - name: etcd\n    typ: pkg\n";
    unparsed(text, "install.etcd[0].typ", "unknown field");
    unparsed("clusterid: x\n", "clusterid", "unknown field");
    unparsed(
        "masters:\n- name: a\n  address: 1.2.3.4\n",
        "masters[0].address",
        "unknown field",
    );
    unparsed(
        "open-ports:\n  node: []\n",
        "open-ports.node",
        "unknown field",
    );
    unparsed(
        "install:\n  addition:\n    nodes: []\n",
        "install.addition.nodes",
        "unknown field",
    );
}

#[test]
fn closed_vocabularies_are_refused_with_their_path() {
    let package =
        |field: &str| format!("install:\n  addition:\n    master:\n    - name: a.sh\n{field}");
    unparsed(
        &package("      type: script\n"),
        "install.addition.master[0].type",
        "unknown variant",
    );
    unparsed(
        &package("      type: binary\n"),
        "install.addition.master[0].type",
        "unknown variant",
    );
    unparsed(
        &package("      dst: /tmp\n"),
        "install.addition.master[0]",
        "missing field `type`",
    );
    let schedule = package("      type: shell\n      schedule: prestart\n");
    unparsed(
        &schedule,
        "install.addition.master[0].schedule",
        "unknown schedule",
    );
    let protocol = "open-ports:\n  worker:\n  - port: 1\n    protocol: sctp\n";
    unparsed(protocol, "open-ports.worker[0].protocol", "unknown variant");
    let dns = "service:\n  dns:\n    corednstype: daemon\n";
    unparsed(dns, "service.dns.corednstype", "unknown coredns type");
    unparsed("masters: 3\n", "masters", "invalid type");
    unparsed("- a\n- b\n", "file", "invalid type");
    unparsed("'unterminated\n", "file", "");
}

#[test]
fn documented_spellings_and_go_zero_values_are_read() {
    let text = "password: 123456\nnetwork:\n  plugin-args: {\"NetworkYamlPath\": \"/etc/kubernetes/addons/calico.yaml\"}\n\
                service:\n  dns:\n    corednstype: \"\"\n    imageversion: 1.8.4\n\
                etcds:\npackage-source-free: 1\n";
    unparsed(text, "package-source-free", "unknown field");
    let text = text.replace("package-source-free: 1\n", "install:\n  package-source: null\n  addition:\n    master:\n    - name: p.sh\n      type: shell\n      schedule: \"\"\n      TimeOut: 10s\n");
    let config = parse(&text).unwrap();
    assert_eq!(config.password, "123456");
    assert_eq!(config.network.plugin_args.len(), 1);
    assert_eq!(config.service.dns.corednstype, None);
    assert_eq!(config.service.dns.imageversion, "1.8.4");
    assert!(config.etcds.is_empty());
    assert_eq!(config.install.package_source, None);
    let hook = &config.install.addition.master[0];
    assert_eq!((hook.schedule, hook.timeout.as_str()), (None, "10s"));
    round_trips(&config);
}

#[test]
fn cluster_identity_and_credentials() {
    let mut config = template();
    config.cluster_id = "K8s_Cluster".to_owned();
    refused(&config, "cluster-id");
    config.cluster_id.clear();
    refused(&config, "cluster-id");
    config.private_key_path.clear();
    config.password.clear();
    refused(&config, "password");
    config.username.clear();
    refused(&config, "username");
    config.private_key_path = "~/.ssh/pri.key".to_owned();
    refused(&config, "private-key-path");
    config.masters.clear();
    config.etcds.clear();
    refused(&config, "masters");
}

#[test]
fn machines_need_a_name_and_an_address() {
    let mut config = template();
    config.workers[0].ip.clear();
    config.workers[1].name.clear();
    config.masters[0].port = 0;
    config.etcds[0].port = 70000;
    refused(&config, "workers[0].ip");
    refused(&config, "workers[1].name");
    refused(&config, "masters[0].port");
    refused(&config, "etcds[0].port");
    config.workers[0].ip = "192.168.0.300".to_owned();
    config.workers[1].name = "Worker".to_owned();
    refused(&config, "workers[0].ip");
    refused(&config, "workers[1].name");
}

#[test]
fn machines_are_listed_once_and_described_alike() {
    let mut config = template();
    config.workers[1].ip = config.workers[0].ip.clone();
    refused(&config, "workers[1].ip");
    config.workers[1].ip = "192.168.0.4".to_owned();
    config.workers[1].name = config.workers[0].name.clone();
    refused(&config, "workers[1].name");
    let mut config = template();
    config.etcds[0].arch = "arm64".to_owned();
    refused(&config, "etcds[0]");
    let problem = config.check().remove(0).to_string();
    assert!(problem.contains("masters[0]"), "{problem}");
}

#[test]
fn a_load_balancer_needs_its_ports() {
    let mut config = template();
    config.loadbalance.bind_port = 0;
    config.loadbalance.port = 777_777;
    refused(&config, "loadbalance.bind-port");
    refused(&config, "loadbalance.port");
    config.loadbalance.ip = "lb.local".to_owned();
    refused(&config, "loadbalance.ip");
}

#[test]
fn addresses_ranges_and_durations_parse() {
    let mut config = template();
    config.service.cidr = "10.32.0.0/33".to_owned();
    config.service.dnsaddr = "10.32.0".to_owned();
    config.service.gateway = "gateway".to_owned();
    config.network.podcidr = "10.244.0.0".to_owned();
    config.apiserver_endpoint = "192.168.0.1".to_owned();
    config.apiserver_timeout = "120".to_owned();
    config.dns_vip = "10.32.0.x".to_owned();
    config.dns_domain = "Cluster.Local".to_owned();
    config.apiserver_cert_sans.dnsnames = vec!["._-^(!#%".to_owned()];
    config.apiserver_cert_sans.ips = vec!["1.2.3".to_owned()];
    for field in [
        "service.cidr",
        "service.dnsaddr",
        "service.gateway",
        "network.podcidr",
        "apiserver-endpoint",
        "apiserver-timeout",
        "dns-vip",
        "dns-domain",
        "apiserver-cert-sans.dnsnames[0]",
        "apiserver-cert-sans.ips[0]",
    ] {
        refused(&config, field);
    }
    config.apiserver_endpoint = "api.cluster.local:port".to_owned();
    refused(&config, "apiserver-endpoint");
    config.apiserver_endpoint = "[fd00::1]:6443".to_owned();
    assert!(
        !config
            .check()
            .iter()
            .any(|p| p.field == "apiserver-endpoint")
    );
}

#[test]
fn paths_runtime_and_endpoint() {
    let mut config = template();
    config.external_ca_path = "externalca".to_owned();
    config.cni_bin_dir = "opt/cni/bin".to_owned();
    config.runtime = "podman".to_owned();
    config.runtime_endpoint = "unix:///run/%zz.sock".to_owned();
    for field in [
        "external-ca-path",
        "cni-bin-dir",
        "runtime",
        "runtime-endpoint",
    ] {
        refused(&config, field);
    }
    config.runtime = "Docker".to_owned();
    config.runtime_endpoint = ":/x".to_owned();
    assert!(!config.check().iter().any(|p| p.field == "runtime"));
    refused(&config, "runtime-endpoint");
}

#[test]
fn open_ports_and_extra_args() {
    let mut config = template();
    config.open_ports.worker[0].port = 777_777;
    config.config_extra_args = vec![ExtraArgs {
        name: "kubelets".to_owned(),
        extra_args: [("cgroup-driver".to_owned(), "systemd".to_owned())].into(),
    }];
    refused(&config, "open-ports.worker[0].port");
    refused(&config, "config-extra-args[0].name");
    refused(&config, "config-extra-args[0].extra-args.cgroup-driver");
}

#[test]
fn package_source_rules() {
    let mut config = template();
    let source = config.install.package_source.as_mut().unwrap();
    source.kind = "zip".to_owned();
    source.dstpath = "packages".to_owned();
    source
        .srcpath
        .insert("arm64".to_owned(), "package.tar.gz".to_owned());
    source.srcpath.remove("amd64");
    for field in [
        "install.package-source.type",
        "install.package-source.dstpath",
        "install.package-source.srcpath.arm64",
        "install.package-source.srcpath",
    ] {
        refused(&config, field);
    }
}

#[test]
fn package_rules() {
    let mut config = template();
    let package = |name: &str, kind, dst: &str, timeout: &str| Package {
        dst: dst.to_owned(),
        timeout: timeout.to_owned(),
        ..Package::new(name, kind)
    };
    config.install.etcd = vec![
        package("", PackageType::Pkg, "", ""),
        package("etcd", PackageType::Bin, "", ""),
        package("etcd", PackageType::Bin, "usr/bin", ""),
        package("etcd", PackageType::Bin, "/usr/sbin", ""),
        package("ok,../../sbin/x", PackageType::File, "/usr/bin", ""),
        package("run.sh", PackageType::Shell, "", "30 seconds"),
        package("etcd", PackageType::Bin, "/tmp", ""),
        package("conf", PackageType::Dir, "/etc/kubernetes", ""),
    ];
    for field in ["name", "dst", "dst", "dst", "dst", "timeout"]
        .iter()
        .enumerate()
    {
        refused(&config, &format!("install.etcd[{}].{}", field.0, field.1));
    }
    let problems = config.check();
    assert!(
        !problems
            .iter()
            .any(|p| p.field.starts_with("install.etcd[6]"))
    );
    assert!(
        !problems
            .iter()
            .any(|p| p.field.starts_with("install.etcd[7]"))
    );
}

#[test]
fn the_dst_allow_list_is_eggos() {
    assert!(dst_allowed("/usr/bin", "etcd"));
    assert!(dst_allowed("/usr/lib/systemd/system/", "docker.service"));
    assert!(dst_allowed("/etc/kubernetes", ""));
    assert!(dst_allowed("/opt/cni/bin/sub", "x"));
    assert!(!dst_allowed("/usr/bin", ""));
    assert!(!dst_allowed("/tmpfoo", "x"));
    assert!(!dst_allowed("/usr/bin", "../lib/x"));
    assert!(!dst_allowed("/", "etc"));
}

#[test]
fn defaults_are_eggos() {
    let config = parse(FIXTURES[1].1).unwrap().with_defaults();
    assert_eq!(config.etcds, config.masters);
    assert_eq!(config.apiserver_endpoint, "192.168.122.114:6443");
    assert_eq!(config.service.cidr, "10.32.0.0/16");
    assert_eq!(config.network.podcidr, "10.244.0.0/16");
    assert_eq!(config.runtime, "iSulad");
    assert_eq!(config.dns_domain, "cluster.local");
    let bare = DeployConfig {
        masters: vec![HostConfig {
            name: "m".to_owned(),
            ip: "10.0.0.1".to_owned(),
            ..HostConfig::default()
        }],
        ..DeployConfig::default()
    }
    .with_defaults();
    assert_eq!(
        (bare.masters[0].port, bare.masters[0].arch.as_str()),
        (DEFAULT_SSH_PORT, DEFAULT_ARCH)
    );
    assert_eq!(
        (bare.cluster_id.as_str(), bare.runtime.as_str()),
        (DEFAULT_CLUSTER_ID, "docker")
    );
    assert_eq!(
        template().with_defaults().apiserver_endpoint,
        "192.168.0.1:8443"
    );
}

#[test]
fn go_durations_give_their_length() {
    use std::time::Duration;
    for (text, length) in [
        ("30s", Duration::from_secs(30)),
        ("1m30s", Duration::from_secs(90)),
        ("1.5h", Duration::from_secs(5400)),
        ("250ms", Duration::from_millis(250)),
        ("0", Duration::ZERO),
    ] {
        assert_eq!(super::parse_go_duration(text), Ok(length), "{text}");
    }
    for text in ["-5s", "30", "s", "1x"] {
        assert!(super::parse_go_duration(text).is_err(), "{text}");
    }
}

fn machine(name: &str, ip: &str) -> HostConfig {
    HostConfig {
        name: name.into(),
        ip: ip.into(),
        port: 22,
        arch: "amd64".into(),
    }
}

#[test]
fn a_join_file_grows_eggos_own_file_and_a_retry_changes_nothing() {
    let config = parse(FIXTURES[0].1).unwrap();
    let join = JoinFile {
        masters: vec![machine("master2", "192.168.122.120")],
        workers: vec![
            machine("master2", "192.168.122.120"),
            machine("worker2", "192.168.122.121"),
        ],
    };
    let grown = config.joined(&join).unwrap();
    let names = |hosts: &[HostConfig]| hosts.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&grown.masters), ["master1", "master2"]);
    assert_eq!(
        names(&grown.workers),
        ["master1", "worker1", "master2", "worker2"]
    );
    // etcd runs on the masters there (no `etcds` list): the new master is
    // one by default.
    assert!(grown.etcds.is_empty());
    assert_eq!(names(&grown.with_defaults().etcds), ["master1", "master2"]);
    assert_eq!(
        grown.joined(&join).unwrap(),
        grown,
        "joining again is a no-op"
    );
    assert_eq!(join.names(), ["master2", "worker2"]);
    grown
        .with_defaults()
        .check()
        .is_empty()
        .then_some(())
        .expect("still passes Eggo's checks");

    // A file that lists its etcd members gets the master among them.
    let mut listed = config.clone();
    listed.etcds = listed.masters.clone();
    assert_eq!(
        names(&listed.joined(&join).unwrap().etcds),
        ["master1", "master2"]
    );

    // Taken out again, the file is as it was.
    let shrunk = grown.without(&["master2".into(), "worker2".into()]);
    assert_eq!(shrunk, config);
    assert_eq!(config.first_master(), Some("master1"));
}

#[test]
fn a_join_is_refused_by_field_when_a_name_or_address_is_taken() {
    let config = parse(FIXTURES[0].1).unwrap();
    let refused = |join: JoinFile| config.joined(&join).unwrap_err();
    let same_ip = refused(JoinFile {
        workers: vec![machine("other", "192.168.122.115")],
        ..JoinFile::default()
    });
    assert_eq!(same_ip.field, "workers[0].name");
    assert!(
        same_ip.reason.contains("already in the cluster as worker1"),
        "{}",
        same_ip.reason
    );
    let same_name = refused(JoinFile {
        workers: vec![machine("worker1", "192.168.122.200")],
        ..JoinFile::default()
    });
    assert!(
        same_name
            .reason
            .contains("with the address 192.168.122.115")
    );
    let promoted = refused(JoinFile {
        masters: vec![machine("worker1", "192.168.122.115")],
        ..JoinFile::default()
    });
    assert!(
        promoted.reason.contains("cannot become a master"),
        "{}",
        promoted.reason
    );
    let bad_ip = refused(JoinFile {
        workers: vec![machine("w9", "not-an-ip")],
        ..JoinFile::default()
    });
    assert_eq!(bad_ip.field, "workers[0].ip");
    assert_eq!(refused(JoinFile::default()).field, "masters");
}
