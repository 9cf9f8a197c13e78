//! The document `eggo template` writes with its default flags
//! (`cmd/configs.go`, `createDeployConfigTemplate`; flags in `cmd/opts.go`).

use std::collections::BTreeMap;

use super::hosts::{HostConfig, LoadBalance};
use super::install::{Install, Package, PackageSource, PackageType, RolePackages, Schedule};
use super::model::{
    CorednsType, DeployConfig, DnsConfig, Network, OpenPort, Protocol, RolePorts, ServiceCluster,
};

/// Eggo's template. Eggo writes the running user's `~/.ssh/id_rsa` as
/// `private-key-path`; this writes root's, the template's user.
pub fn template() -> DeployConfig {
    let lb = LoadBalance {
        name: "k8s-loadbalance".to_owned(),
        ip: "192.168.0.1".to_owned(),
        port: 22,
        arch: "amd64".to_owned(),
        bind_port: 8443,
    };
    DeployConfig {
        cluster_id: "k8s-cluster".to_owned(),
        username: "root".to_owned(),
        password: "123456".to_owned(),
        private_key_path: "/root/.ssh/id_rsa".to_owned(),
        masters: hosts("k8s-master", &["192.168.0.2"]),
        workers: hosts("k8s-worker", &["192.168.0.3", "192.168.0.4"]),
        // With no etcd flag, Eggo names the etcd machines after the masters.
        etcds: hosts("k8s-master", &["192.168.0.2"]),
        apiserver_endpoint: format!("{}:{}", lb.ip, lb.bind_port),
        loadbalance: lb,
        external_ca_path: "/opt/externalca".to_owned(),
        service: ServiceCluster {
            cidr: "10.32.0.0/16".to_owned(),
            dnsaddr: "10.32.0.10".to_owned(),
            gateway: "10.32.0.1".to_owned(),
            dns: DnsConfig {
                corednstype: Some(CorednsType::Binary),
                ..DnsConfig::default()
            },
        },
        network: Network {
            podcidr: "10.244.0.0/16".to_owned(),
            plugin: "calico".to_owned(),
            plugin_args: BTreeMap::new(),
        },
        apiserver_timeout: "120s".to_owned(),
        etcd_token: "etcd-cluster".to_owned(),
        dns_vip: "10.32.0.10".to_owned(),
        dns_domain: "cluster.local".to_owned(),
        pause_image: "k8s.gcr.io/pause:3.2".to_owned(),
        network_plugin: "cni".to_owned(),
        cni_bin_dir: "/usr/libexec/cni,/opt/cni/bin".to_owned(),
        runtime: "iSulad".to_owned(),
        runtime_endpoint: "unix:///var/run/isulad.sock".to_owned(),
        open_ports: open_ports(),
        install: install(),
        ..DeployConfig::default()
    }
}

/// `prefix-0`, `prefix-1`, … at `ips`, port 22, `amd64`.
fn hosts(prefix: &str, ips: &[&str]) -> Vec<HostConfig> {
    ips.iter()
        .enumerate()
        .map(|(i, ip)| HostConfig {
            name: format!("{prefix}-{i}"),
            ip: (*ip).to_owned(),
            port: 22,
            arch: "amd64".to_owned(),
        })
        .collect()
}

/// rpcbind and calico's BGP on workers; CoreDNS (run as a binary) on masters.
fn open_ports() -> RolePorts {
    let open = |port, protocol| OpenPort { port, protocol };
    RolePorts {
        worker: vec![open(111, Protocol::Tcp), open(179, Protocol::Tcp)],
        master: vec![
            open(53, Protocol::Tcp),
            open(53, Protocol::Udp),
            open(9153, Protocol::Tcp),
        ],
        ..RolePorts::default()
    }
}

fn install() -> Install {
    let pkg = |name: &str| Package::new(name, PackageType::Pkg);
    let srcpath = [("arm64", "arm64"), ("amd64", "amd64")].map(|(arch, file)| {
        (
            arch.to_owned(),
            format!("/root/packages/packages-{file}.tar.gz"),
        )
    });
    Install {
        package_source: Some(PackageSource {
            kind: "tar.gz".to_owned(),
            dstpath: String::new(),
            srcpath: srcpath.into_iter().collect(),
        }),
        kubernetes_master: vec![pkg("kubernetes-client,kubernetes-master")],
        kubernetes_worker: vec![
            pkg("docker-engine,kubernetes-client,kubernetes-node,kubernetes-kubelet"),
            pkg("conntrack-tools,socat"),
        ],
        container: vec![
            pkg(
                "emacs-filesystem,gflags,gpm-libs,re2,rsync,vim-filesystem,vim-common,vim-enhanced,zlib-devel",
            ),
            pkg("libwebsockets,protobuf,protobuf-devel,grpc,libcgroup"),
            pkg("yajl,lxc,lxc-libs,lcr,clibcni,iSulad"),
        ],
        network: vec![pkg("containernetworking-plugins")],
        etcd: vec![pkg("etcd")],
        loadbalance: vec![
            pkg("gd,gperftools-libs,libunwind,libwebp,libxslt"),
            pkg(
                "nginx,nginx-all-modules,nginx-filesystem,nginx-mod-http-image-filter,nginx-mod-http-perl,nginx-mod-http-xslt-filter,nginx-mod-mail,nginx-mod-stream",
            ),
        ],
        image: vec![Package::new("pause.tar", PackageType::Image)],
        dns: vec![pkg("coredns")],
        addition: RolePackages {
            master: vec![
                hook("prejoin.sh", Schedule::Prejoin, "30s"),
                Package::new("calico.yaml", PackageType::Yaml),
            ],
            worker: vec![hook("postjoin.sh", Schedule::Postjoin, "")],
            ..RolePackages::default()
        },
    }
}

fn hook(name: &str, schedule: Schedule, timeout: &str) -> Package {
    Package {
        schedule: Some(schedule),
        timeout: timeout.to_owned(),
        ..Package::new(name, PackageType::Shell)
    }
}
