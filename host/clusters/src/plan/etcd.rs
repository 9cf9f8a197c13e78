//! An etcd member, as Eggo sets one up: TLS for clients and peers from the
//! cluster's etcd CA, settings in an environment file, a notify unit.

use super::step::{PKI_DIR, Plan, Step, keyed_all, put, run, service, socket};
use crate::topology::Machine;
use crate::units::Unit;

/// Where etcd keeps its data (Eggo's default).
pub const DATA_DIR: &str = "/var/lib/etcd/default.etcd";
/// Its settings. Eggo writes `/etc/etcd/etcd.conf`, outside its own `dst`
/// allow-list; here it stays under `/etc/kubernetes`, which clean-up owns.
const ENV_FILE: &str = "/etc/kubernetes/etcd.conf";

/// The steps that make `member` an etcd member of a new cluster.
pub fn etcd(plan: &Plan<'_>, member: &Machine) -> Vec<Step> {
    if !member.roles.etcd {
        return Vec::new();
    }
    let Some(material) = plan.material.nodes.get(&member.name) else {
        return Vec::new();
    };
    let mut steps = vec![put(
        format!("{PKI_DIR}/etcd/ca.crt"),
        plan.material.pki.etcd_ca.certificate.clone(),
        0o644,
    )];
    steps.extend(keyed_all(&[
        ("etcd/server", &material.etcd_server),
        ("etcd/peer", &material.etcd_peer),
        ("etcd/healthcheck-client", &material.etcd_healthcheck),
    ]));
    steps.push(put(ENV_FILE, environment(plan, member), 0o600));
    steps.push(run(
        "make etcd's data directory",
        "mkdir -p -m 0700 /var/lib/etcd",
    ));
    let unit = Unit {
        description: "Etcd Server",
        after: vec!["network.target", "network-online.target"],
        program: "/usr/bin/etcd".into(),
        service: vec![
            "Type=notify",
            "WorkingDirectory=/var/lib/etcd/",
            "EnvironmentFile=-/etc/kubernetes/etcd.conf",
        ],
        ..Unit::default()
    };
    steps.extend(service("etcd", &unit));
    steps
}

/// etcd's settings as `ETCD_*` variables (Eggo's set), with the file's
/// `etcd` extra arguments laid over them.
fn environment(plan: &Plan<'_>, member: &Machine) -> String {
    let client = format!("https://{}", socket(member, 2379));
    let peer = format!("https://{}", socket(member, 2380));
    let initial_cluster = plan
        .topology
        .with(|roles| roles.etcd)
        .map(|other| format!("{}=https://{}", other.name, socket(other, 2380)))
        .collect::<Vec<_>>()
        .join(",");
    let mut variables = std::collections::BTreeMap::from([
        ("ETCD_NAME".to_owned(), member.name.clone()),
        ("ETCD_DATA_DIR".to_owned(), DATA_DIR.to_owned()),
        ("ETCD_ADVERTISE_CLIENT_URLS".to_owned(), client.clone()),
        (
            "ETCD_LISTEN_CLIENT_URLS".to_owned(),
            format!("https://127.0.0.1:2379,{client}"),
        ),
        ("ETCD_LISTEN_PEER_URLS".to_owned(), peer.clone()),
        ("ETCD_INITIAL_ADVERTISE_PEER_URLS".to_owned(), peer),
        (
            "ETCD_LISTEN_METRICS_URLS".to_owned(),
            format!("https://{}", socket(member, 2381)),
        ),
        ("ETCD_INITIAL_CLUSTER".to_owned(), initial_cluster),
        ("ETCD_INITIAL_CLUSTER_STATE".to_owned(), "new".to_owned()),
        (
            "ETCD_INITIAL_CLUSTER_TOKEN".to_owned(),
            plan.config.etcd_token.clone(),
        ),
        ("ETCD_SNAPSHOT_COUNT".to_owned(), "10000".to_owned()),
        ("ETCD_CLIENT_CERT_AUTH".to_owned(), "true".to_owned()),
        (
            "ETCD_TRUSTED_CA_FILE".to_owned(),
            format!("{PKI_DIR}/etcd/ca.crt"),
        ),
        (
            "ETCD_CERT_FILE".to_owned(),
            format!("{PKI_DIR}/etcd/server.crt"),
        ),
        (
            "ETCD_KEY_FILE".to_owned(),
            format!("{PKI_DIR}/etcd/server.key"),
        ),
        ("ETCD_PEER_CLIENT_CERT_AUTH".to_owned(), "true".to_owned()),
        (
            "ETCD_PEER_TRUSTED_CA_FILE".to_owned(),
            format!("{PKI_DIR}/etcd/ca.crt"),
        ),
        (
            "ETCD_PEER_CERT_FILE".to_owned(),
            format!("{PKI_DIR}/etcd/peer.crt"),
        ),
        (
            "ETCD_PEER_KEY_FILE".to_owned(),
            format!("{PKI_DIR}/etcd/peer.key"),
        ),
    ]);
    if member.arch != "amd64" {
        variables.insert("ETCD_UNSUPPORTED_ARCH".to_owned(), member.arch.clone());
    }
    // Eggo's checker wants extra arguments as flags (`--quota-backend-bytes`);
    // etcd reads each flag from its ETCD_ variable too.
    for (flag, value) in plan.extra_args("etcd").into_iter().flatten() {
        let name = flag
            .trim_start_matches('-')
            .replace('-', "_")
            .to_uppercase();
        variables.insert(format!("ETCD_{name}"), value.clone());
    }
    variables
        .into_iter()
        .map(|(key, value)| format!("{key}={value}\n"))
        .collect()
}
