//! A control-plane machine: the cluster's authorities and its own
//! certificates, kubeconfigs for the controller manager and scheduler, and
//! the three services with Eggo's flags (less those the Kubernetes it
//! installs no longer has).

use super::step::{
    CONFIG_DIR, PKI_DIR, Plan, Step, keyed, keyed_all, kubeconfig_file, put, service, socket,
};
use crate::topology::Machine;
use crate::units::{Unit, flags};

/// The steps that make `master` run the control plane.
pub fn control_plane(plan: &Plan<'_>, master: &Machine) -> Vec<Step> {
    if !master.roles.master {
        return Vec::new();
    }
    let Some(own) = plan.material.nodes.get(&master.name) else {
        return Vec::new();
    };
    let pki = &plan.material.pki;
    let mut steps = Vec::new();
    steps.extend(keyed("ca", &pki.ca));
    steps.extend(keyed("front-proxy-ca", &pki.front_proxy_ca));
    steps.push(put(
        format!("{PKI_DIR}/etcd/ca.crt"),
        pki.etcd_ca.certificate.clone(),
        0o644,
    ));
    steps.extend(keyed(
        "apiserver-etcd-client",
        &plan.material.apiserver_etcd_client,
    ));
    steps.push(put(
        format!("{PKI_DIR}/sa.key"),
        pki.service_account_key.clone(),
        0o600,
    ));
    steps.push(put(
        format!("{PKI_DIR}/sa.pub"),
        plan.material.service_account_public.clone(),
        0o644,
    ));
    steps.extend(keyed_all(&[
        ("apiserver", &own.apiserver),
        ("apiserver-kubelet-client", &own.apiserver_kubelet_client),
        ("front-proxy-client", &own.front_proxy_client),
    ]));
    steps.push(put(
        format!("{CONFIG_DIR}/encryption-config.yaml"),
        encryption_config(&plan.material.encryption_key),
        0o600,
    ));
    // The controller manager and scheduler talk to the API server on their
    // own machine; admin.conf goes through the cluster's endpoint.
    let local = format!("https://{}", socket(master, 6443));
    steps.push(kubeconfig_file(
        plan,
        "admin.conf",
        "default-admin",
        &plan.material.admin,
        &plan.endpoint_url(),
    ));
    // Each service right after its own files, so a changed file restarts
    // the service that reads it.
    steps.extend(service("kube-apiserver", &apiserver(plan, master)));
    if let Some(cert) = &own.controller_manager {
        steps.push(kubeconfig_file(
            plan,
            "controller-manager.conf",
            "default-controller-manager",
            cert,
            &local,
        ));
    }
    steps.extend(service(
        "kube-controller-manager",
        &controller_manager(plan),
    ));
    if let Some(cert) = &own.scheduler {
        steps.push(kubeconfig_file(
            plan,
            "scheduler.conf",
            "default-scheduler",
            cert,
            &local,
        ));
    }
    steps.extend(service("kube-scheduler", &scheduler(plan)));
    steps
}

fn apiserver(plan: &Plan<'_>, master: &Machine) -> Unit {
    let pki = |file: &str| format!("{PKI_DIR}/{file}");
    Unit {
        description: "Kubernetes API Server",
        after: vec!["network.target", "etcd.service"],
        program: "/usr/bin/kube-apiserver".into(),
        flags: flags([
            ("--advertise-address", master.ip.to_string()),
            ("--allow-privileged", "true".into()),
            ("--authorization-mode", "Node,RBAC".into()),
            (
                "--enable-admission-plugins",
                "NamespaceLifecycle,NodeRestriction,LimitRanger,ServiceAccount,DefaultStorageClass,ResourceQuota".into(),
            ),
            ("--secure-port", "6443".into()),
            ("--enable-bootstrap-token-auth", "true".into()),
            ("--etcd-cafile", pki("etcd/ca.crt")),
            ("--etcd-certfile", pki("apiserver-etcd-client.crt")),
            ("--etcd-keyfile", pki("apiserver-etcd-client.key")),
            ("--etcd-servers", plan.etcd_servers()),
            ("--client-ca-file", pki("ca.crt")),
            ("--kubelet-client-certificate", pki("apiserver-kubelet-client.crt")),
            ("--kubelet-client-key", pki("apiserver-kubelet-client.key")),
            ("--kubelet-preferred-address-types", "InternalIP,Hostname".into()),
            ("--proxy-client-cert-file", pki("front-proxy-client.crt")),
            ("--proxy-client-key-file", pki("front-proxy-client.key")),
            ("--tls-cert-file", pki("apiserver.crt")),
            ("--tls-private-key-file", pki("apiserver.key")),
            ("--service-cluster-ip-range", plan.topology.service_cidr.to_string()),
            (
                "--service-account-issuer",
                format!("https://kubernetes.default.svc.{}", plan.config.dns_domain),
            ),
            ("--service-account-key-file", pki("sa.pub")),
            ("--service-account-signing-key-file", pki("sa.key")),
            ("--service-node-port-range", "30000-32767".into()),
            ("--requestheader-allowed-names", "front-proxy-client".into()),
            ("--requestheader-client-ca-file", pki("front-proxy-ca.crt")),
            ("--requestheader-extra-headers-prefix", "X-Remote-Extra-".into()),
            ("--requestheader-group-headers", "X-Remote-Group".into()),
            ("--requestheader-username-headers", "X-Remote-User".into()),
            (
                "--encryption-provider-config",
                format!("{CONFIG_DIR}/encryption-config.yaml"),
            ),
        ]),
        ..Unit::default()
    }
    .with_extra_args(plan.extra_args("kube-apiserver"))
}

fn controller_manager(plan: &Plan<'_>) -> Unit {
    let kubeconfig = format!("{CONFIG_DIR}/controller-manager.conf");
    Unit {
        description: "Kubernetes Controller Manager",
        after: vec!["network.target", "kube-apiserver.service"],
        program: "/usr/bin/kube-controller-manager".into(),
        flags: flags([
            ("--bind-address", "0.0.0.0".into()),
            ("--cluster-cidr", plan.topology.pod_cidr.to_string()),
            ("--allocate-node-cidrs", "true".into()),
            ("--cluster-name", "kubernetes".into()),
            ("--cluster-signing-cert-file", format!("{PKI_DIR}/ca.crt")),
            ("--cluster-signing-key-file", format!("{PKI_DIR}/ca.key")),
            ("--kubeconfig", kubeconfig.clone()),
            ("--authentication-kubeconfig", kubeconfig.clone()),
            ("--authorization-kubeconfig", kubeconfig),
            ("--leader-elect", "true".into()),
            ("--root-ca-file", format!("{PKI_DIR}/ca.crt")),
            (
                "--service-account-private-key-file",
                format!("{PKI_DIR}/sa.key"),
            ),
            (
                "--service-cluster-ip-range",
                plan.topology.service_cidr.to_string(),
            ),
            ("--use-service-account-credentials", "true".into()),
            (
                "--requestheader-client-ca-file",
                format!("{PKI_DIR}/front-proxy-ca.crt"),
            ),
            ("--controllers", "*,bootstrapsigner,tokencleaner".into()),
            ("--v", "2".into()),
        ]),
        ..Unit::default()
    }
    .with_extra_args(plan.extra_args("kube-controller-manager"))
}

fn scheduler(plan: &Plan<'_>) -> Unit {
    let kubeconfig = format!("{CONFIG_DIR}/scheduler.conf");
    Unit {
        description: "Kubernetes Scheduler Plugin",
        after: vec!["network.target", "kube-apiserver.service"],
        program: "/usr/bin/kube-scheduler".into(),
        flags: flags([
            ("--kubeconfig", kubeconfig.clone()),
            ("--authentication-kubeconfig", kubeconfig.clone()),
            ("--authorization-kubeconfig", kubeconfig),
            ("--leader-elect", "true".into()),
            ("--v", "2".into()),
        ]),
        ..Unit::default()
    }
    .with_extra_args(plan.extra_args("kube-scheduler"))
}

/// Eggo's encryption configuration: Secrets sealed with AES-CBC, older
/// plain ones still readable.
fn encryption_config(key: &str) -> String {
    format!(
        "kind: EncryptionConfig\napiVersion: v1\nresources:\n  - resources:\n      - secrets\n    \
         providers:\n      - aescbc:\n          keys:\n            - name: key1\n              \
         secret: {key}\n      - identity: {{}}\n"
    )
}

/// The objects Eggo applies once the first API server answers: the API
/// server's access to kubelets, and TLS bootstrapping for kubelets (their
/// token, the right to ask for a certificate, and auto-approval of client
/// certificates and their renewals).
pub fn bootstrap_rbac(plan: &Plan<'_>) -> String {
    let token = &plan.material.bootstrap_token;
    let (id, secret) = token.split_once('.').unwrap_or((token, ""));
    let binding = |name: &str, kind: &str, subject: &str, role: &str| {
        format!(
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\n\
             roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\n\
             subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: {kind}\n  name: {subject}\n"
        )
    };
    let mut manifest = String::from(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  \
         name: system:kube-apiserver-to-kubelet\n  annotations:\n    \
         rbac.authorization.kubernetes.io/autoupdate: \"true\"\n  labels:\n    \
         kubernetes.io/bootstrapping: rbac-defaults\nrules:\n- apiGroups: [\"\"]\n  \
         resources: [nodes/proxy, nodes/stats, nodes/log, nodes/spec, nodes/metrics]\n  \
         verbs: [\"*\"]\n",
    );
    manifest.push_str(&binding(
        "system:kube-apiserver",
        "User",
        "kube-apiserver-kubelet-client",
        "system:kube-apiserver-to-kubelet",
    ));
    manifest.push_str(&binding(
        "create-csrs-for-bootstrapping",
        "Group",
        "system:bootstrappers",
        "system:node-bootstrapper",
    ));
    manifest.push_str(&binding(
        "auto-approve-csrs-for-group",
        "Group",
        "system:bootstrappers",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    ));
    manifest.push_str(&binding(
        "auto-approve-renewals-for-nodes",
        "Group",
        "system:nodes",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    ));
    manifest.push_str(&format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-{id}\n  \
         namespace: kube-system\ntype: bootstrap.kubernetes.io/token\nstringData:\n  \
         description: bootstrap token for wasmco\n  token-id: {id}\n  token-secret: {secret}\n  \
         usage-bootstrap-authentication: \"true\"\n  usage-bootstrap-signing: \"true\"\n  \
         auth-extra-groups: system:bootstrappers:worker\n"
    ));
    manifest
}
