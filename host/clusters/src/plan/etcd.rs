//! An etcd member, as Eggo sets one up: TLS for clients and peers from the
//! cluster's etcd CA, settings in an environment file, a notify unit.

use super::step::{PKI_DIR, Plan, Step, keyed_all, put, run, service, socket};
use crate::material::{EtcdStart, initial_cluster};
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
    let joins = material
        .etcd_start
        .as_ref()
        .is_some_and(|start| start.existing);
    if joins {
        steps.push(add_member(plan, member));
    }
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
    if joins {
        steps.push(promote_member(plan, member));
    }
    steps
}

/// etcdctl (Eggo's archive ships it beside etcd) with this machine's
/// health-check client certificate, against `endpoints`.
fn etcdctl(endpoints: &str) -> String {
    format!(
        "ETCDCTL_API=3 etcdctl --endpoints={endpoints} --cacert={PKI_DIR}/etcd/ca.crt \
         --cert={PKI_DIR}/etcd/healthcheck-client.crt --key={PKI_DIR}/etcd/healthcheck-client.key"
    )
}

/// The other members' client URLs: a joining member reaches the cluster
/// through them.
fn other_members(plan: &Plan<'_>, member: &Machine) -> String {
    plan.topology
        .with(|roles| roles.etcd)
        .filter(|other| other.name != member.name)
        .map(|other| format!("https://{}", socket(other, 2379)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Adds `member` to the running cluster as a learner (it counts towards
/// no quorum until it has caught up, so a member that never starts
/// cannot stop the cluster), unless it is there already or has its data.
fn add_member(plan: &Plan<'_>, member: &Machine) -> Step {
    let peer = format!("https://{}", socket(member, 2380));
    let ctl = etcdctl(&other_members(plan, member));
    Step::Run(wasmco_nodes::Command::new(
        format!("add {} to etcd's members", member.name),
        format!(
            "[ -d {DATA_DIR}/member ] && exit 0; \
             members=$({ctl} member list) || exit 1; \
             printf '%s\\n' \"$members\" | grep -qF ', {peer}, ' || \
             {ctl} member add {name} --learner --peer-urls={peer} >/dev/null",
            name = member.name
        ),
        std::time::Duration::from_secs(60),
    ))
}

/// Makes the learner `member` a voting member once it has caught up with
/// the leader (etcd refuses until then).
fn promote_member(plan: &Plan<'_>, member: &Machine) -> Step {
    let peer = format!("https://{}", socket(member, 2380));
    let ctl = etcdctl(&other_members(plan, member));
    Step::Run(wasmco_nodes::Command::new(
        format!("promote {} to a voting etcd member", member.name),
        format!(
            "for i in $(seq 120); do members=$({ctl} member list) || exit 1; \
             line=$(printf '%s\\n' \"$members\" | grep -F ', {peer}, '); \
             case \"$line\" in *', false') exit 0 ;; '') echo 'not a member' >&2; exit 1 ;; esac; \
             {ctl} member promote ${{line%%,*}} >/dev/null 2>&1 && exit 0; sleep 1; done; \
             {ctl} member promote ${{line%%,*}}"
        ),
        std::time::Duration::from_secs(150),
    ))
}

/// Removes `leaving`'s member from the cluster, run on `on` (a member
/// that stays); nothing when the members, as listed, no longer have it. A
/// list that cannot be read fails the step: the member would otherwise
/// be stopped while it still votes.
pub fn remove_member(on: &Machine, leaving: &Machine) -> Step {
    let peer = format!("https://{}", socket(leaving, 2380));
    let ctl = etcdctl(&format!("https://{}", socket(on, 2379)));
    Step::Run(wasmco_nodes::Command::new(
        format!("remove {} from etcd's members", leaving.name),
        format!(
            "members=$({ctl} member list) || exit 1; \
             id=$(printf '%s\\n' \"$members\" | grep -F ', {peer}, ' | cut -d, -f1); \
             [ -z \"$id\" ] || {ctl} member remove $id >/dev/null"
        ),
        std::time::Duration::from_secs(60),
    ))
}

/// How `member` started (or starts): as kept with the cluster's
/// material, else as a member of a new cluster with every etcd machine.
fn start_of(plan: &Plan<'_>, member: &Machine) -> EtcdStart {
    plan.material
        .nodes
        .get(&member.name)
        .and_then(|node| node.etcd_start.clone())
        .unwrap_or_else(|| EtcdStart {
            initial_cluster: initial_cluster(
                &plan.topology.with(|roles| roles.etcd).collect::<Vec<_>>(),
            ),
            existing: false,
        })
}

/// etcd's settings as `ETCD_*` variables (Eggo's set), with the file's
/// `etcd` extra arguments laid over them.
fn environment(plan: &Plan<'_>, member: &Machine) -> String {
    let client = format!("https://{}", socket(member, 2379));
    let peer = format!("https://{}", socket(member, 2380));
    let start = start_of(plan, member);
    let cluster_state = if start.existing { "existing" } else { "new" };
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
        ("ETCD_INITIAL_CLUSTER".to_owned(), start.initial_cluster),
        (
            "ETCD_INITIAL_CLUSTER_STATE".to_owned(),
            cluster_state.to_owned(),
        ),
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
