//! A machine that runs pods: containerd, the kubelet (which gets its client
//! certificate through the CSR API with the cluster's bootstrap token), and
//! kube-proxy.

use base64::Engine;

use super::packages::images;
use super::step::{CONFIG_DIR, PKI_DIR, Plan, Step, keyed, kubeconfig_file, put, service};
use crate::topology::Machine;
use crate::units::{Unit, flags};

/// containerd's socket when the file names none.
const CONTAINERD_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";
/// containerd's settings. Eggo writes `/etc/containerd/config.toml`,
/// outside its `dst` allow-list; here they stay under `/etc/kubernetes`.
const CONTAINERD_CONFIG: &str = "/etc/kubernetes/containerd.toml";

/// What a machine that runs pods needs before the cluster exists: the
/// container runtime with its images, and the pod network. A deploy does
/// this while the control plane is being made.
pub fn worker_prepare(plan: &Plan<'_>, node: &Machine) -> Vec<Step> {
    if !node.roles.worker {
        return Vec::new();
    }
    let mut steps = containerd(plan);
    steps.extend(images(plan, node));
    steps.extend(super::network::bridge(plan, node));
    steps
}

/// The kubelet and kube-proxy, which need the API server: each service
/// after its own files, so a changed file restarts the service reading it.
pub fn worker_start(plan: &Plan<'_>, node: &Machine) -> Vec<Step> {
    if !node.roles.worker {
        return Vec::new();
    }
    let mut steps = vec![put(
        format!("{PKI_DIR}/ca.crt"),
        plan.material.pki.ca.certificate.clone(),
        0o644,
    )];
    steps.push(put(
        format!("{CONFIG_DIR}/kubelet-bootstrap.kubeconfig"),
        bootstrap_kubeconfig(plan),
        0o600,
    ));
    steps.push(put(
        format!("{CONFIG_DIR}/kubelet_config.yaml"),
        kubelet_config(plan),
        0o644,
    ));
    steps.push(super::step::run(
        "make the kubelet's directory",
        "mkdir -p /var/lib/kubelet",
    ));
    steps.extend(service("kubelet", &kubelet(plan, node)));
    if let Some(cert) = plan
        .material
        .nodes
        .get(&node.name)
        .and_then(|own| own.kube_proxy.as_ref())
    {
        steps.extend(keyed("kube-proxy", cert));
        steps.push(kubeconfig_file(
            plan,
            "kube-proxy.conf",
            "default-kube-proxy",
            cert,
            &plan.endpoint_url(),
        ));
        steps.extend(service("kube-proxy", &kube_proxy(plan, node)));
    }
    steps
}

/// containerd with the CRI settings Kubernetes needs: the file's pause
/// image and registries, cgroupfs (the kubelet's default driver, as Eggo
/// leaves it), CNI from the file's directories. Its unit replaces the
/// distribution's under /etc/systemd/system, so the package stays as it
/// was installed.
fn containerd(plan: &Plan<'_>) -> Vec<Step> {
    let config = plan.config;
    let bin_dir = config
        .cni_bin_dir
        .split(',')
        .next()
        .unwrap_or_default()
        .trim();
    let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
    let mut toml = format!(
        "version = 2\n\n[{cri}]\n  sandbox_image = {pause:?}\n  \
         # Containers may not lower their OOM score below containerd's own,\n  \
         # which a machine without CAP_SYS_RESOURCE could not grant anyway.\n  \
         restrict_oom_score_adj = true\n\n\
         [{cri}.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n\n\
         [{cri}.containerd.runtimes.runc.options]\n  SystemdCgroup = false\n\n\
         [{cri}.cni]\n  bin_dir = {bin_dir:?}\n  conf_dir = \"/etc/cni/net.d\"\n",
        pause = config.pause_image,
    );
    if !config.registry_mirrors.is_empty() {
        let endpoints: Vec<String> = config
            .registry_mirrors
            .iter()
            .map(|mirror| format!("{mirror:?}"))
            .collect();
        toml.push_str(&format!(
            "\n[{cri}.registry.mirrors.\"docker.io\"]\n  endpoint = [{}]\n",
            endpoints.join(", ")
        ));
    }
    for registry in &config.insecure_registries {
        toml.push_str(&format!(
            "\n[{cri}.registry.configs.{registry:?}.tls]\n  insecure_skip_verify = true\n"
        ));
    }
    let unit = Unit {
        description: "containerd container runtime",
        after: vec!["network.target", "local-fs.target"],
        pre: vec!["-/sbin/modprobe overlay".into()],
        program: "/usr/bin/containerd".into(),
        flags: flags([("--config", CONTAINERD_CONFIG.into())]),
        service: vec![
            "Type=notify",
            "Delegate=yes",
            "KillMode=process",
            "TasksMax=infinity",
        ],
    }
    .with_extra_args(plan.extra_args("container-engine"));
    vec![
        put(CONTAINERD_CONFIG, toml, 0o644),
        put(
            "/etc/systemd/system/containerd.service",
            unit.render(),
            0o644,
        ),
        Step::start("containerd", Some("/usr/bin/containerd")),
    ]
}

fn kubelet(plan: &Plan<'_>, node: &Machine) -> Unit {
    let endpoint = if plan.config.runtime_endpoint.is_empty() {
        CONTAINERD_ENDPOINT.to_owned()
    } else {
        plan.config.runtime_endpoint.clone()
    };
    Unit {
        description: "The Kubernetes Node Agent",
        after: vec!["network-online.target", "containerd.service"],
        program: "/usr/bin/kubelet".into(),
        flags: flags([
            ("--config", format!("{CONFIG_DIR}/kubelet_config.yaml")),
            ("--kubeconfig", format!("{CONFIG_DIR}/kubelet.kubeconfig")),
            (
                "--bootstrap-kubeconfig",
                format!("{CONFIG_DIR}/kubelet-bootstrap.kubeconfig"),
            ),
            ("--register-node", "true".into()),
            ("--hostname-override", node.name.clone()),
            ("--node-ip", node.ip.to_string()),
            ("--container-runtime-endpoint", endpoint),
            ("--v", "2".into()),
        ]),
        ..Unit::default()
    }
    .with_extra_args(plan.extra_args("kubelet"))
}

fn kube_proxy(plan: &Plan<'_>, node: &Machine) -> Unit {
    Unit {
        description: "Kubernetes Kube-Proxy Server",
        after: vec!["network.target"],
        program: "/usr/bin/kube-proxy".into(),
        // Flags, not a configuration file: kube-proxy ignores its flags
        // when it has one, and the file's `config-extra-args` are flags.
        flags: flags([
            ("--kubeconfig", format!("{CONFIG_DIR}/kube-proxy.conf")),
            ("--cluster-cidr", plan.topology.pod_cidr.to_string()),
            ("--proxy-mode", "iptables".into()),
            ("--hostname-override", node.name.clone()),
            ("--v", "2".into()),
        ]),
        ..Unit::default()
    }
    .with_extra_args(plan.extra_args("kube-proxy"))
}

/// Eggo's kubelet configuration. `failCgroupV1: false` because Eggo's
/// machines (openEuler) run cgroup v1; `failSwapOn: false` because wasmco
/// does not turn a machine's swap off behind its owner's back (Eggo's
/// `swapoff -a`): pods get no swap either way.
fn kubelet_config(plan: &Plan<'_>) -> String {
    let serving = if plan.config.enable_kubelet_serving {
        "serverTLSBootstrap: true\n"
    } else {
        ""
    };
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n  \
         x509:\n    clientCAFile: {PKI_DIR}/ca.crt\nauthorization:\n  mode: Webhook\n\
         clusterDNS:\n- {dns}\nclusterDomain: {domain}\nrotateCertificates: true\n\
         runtimeRequestTimeout: \"15m\"\ncgroupDriver: cgroupfs\nfailCgroupV1: false\n\
         failSwapOn: false\n{serving}",
        dns = plan.topology.dns_ip,
        domain = plan.config.dns_domain,
    )
}

/// The kubelet's first credentials: the bootstrap token, good only for
/// asking the cluster to sign the kubelet's own certificate.
fn bootstrap_kubeconfig(plan: &Plan<'_>) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(&plan.material.pki.ca.certificate);
    let cluster = &plan.topology.cluster;
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    \
         server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: kubelet-bootstrap\n  \
         user:\n    token: {token}\ncontexts:\n- name: default\n  context:\n    cluster: {cluster}\n    \
         user: kubelet-bootstrap\ncurrent-context: default\n",
        server = plan.endpoint_url(),
        token = plan.material.bootstrap_token,
    )
}
