//! Machines joining and leaving, checked without machines: what the
//! machines already there run with never changes, and a joining etcd
//! member is added to the running members before it starts.

use wasmco_core::eggo::{HostConfig, JoinFile, parse};
use wasmco_pki::ClusterPki;

use crate::material::ClusterMaterial;
use crate::plan::{self, Plan, Step};
use crate::topology::Topology;

const FILE: &str = r#"
cluster-id: small
username: root
password: secret
masters:
- {name: m1, ip: 192.0.2.1, port: 22}
workers:
- {name: w1, ip: 192.0.2.11, port: 22}
- {name: w2, ip: 192.0.2.12, port: 22}
network: {podcidr: 10.244.0.0/16, plugin: bridge}
"#;

fn machine(name: &str, ip: &str) -> HostConfig {
    HostConfig {
        name: name.into(),
        ip: ip.into(),
        port: 22,
        arch: "amd64".into(),
    }
}

fn etcd_env(plan: &Plan<'_>, node: &str) -> (String, Vec<String>) {
    let machine = plan.topology.machine(node).unwrap();
    let steps = plan::etcd(plan, machine);
    let env = steps
        .iter()
        .find_map(|step| match step {
            Step::Put(file) if file.path.ends_with("etcd.conf") => {
                Some(String::from_utf8_lossy(&file.contents).into_owned())
            }
            _ => None,
        })
        .unwrap();
    (
        env,
        steps.iter().map(|step| step.name().to_owned()).collect(),
    )
}

#[test]
fn a_master_joining_keeps_every_pod_slice_and_joins_etcd_as_a_learner() {
    let config = parse(FILE).unwrap();
    let topology = Topology::of(&config.with_defaults()).unwrap();
    let pki = ClusterPki::create("small").unwrap();
    let mut material = ClusterMaterial::create(&topology, pki, &[]).unwrap();
    let slices = material.pod_subnets();
    assert_eq!(slices.len(), 2, "{slices:?}");

    // A master that also runs pods is listed before the workers: laid out
    // afresh it would take w1's slice.
    let join = JoinFile {
        masters: vec![machine("m2", "192.0.2.2")],
        workers: vec![machine("m2", "192.0.2.2")],
    };
    let grown = config.joined(&join).unwrap().with_defaults();
    assert_ne!(
        Topology::of(&grown)
            .unwrap()
            .machine("w1")
            .unwrap()
            .pod_subnet,
        Some(slices["w1"]),
        "the test means something"
    );
    let kept = Topology::keeping(&grown, &slices).unwrap();
    for worker in ["w1", "w2"] {
        assert_eq!(
            kept.machine(worker).unwrap().pod_subnet,
            Some(slices[worker])
        );
    }
    let m2 = kept.machine("m2").unwrap().pod_subnet.unwrap();
    assert!(
        !slices.values().any(|slice| *slice == m2),
        "{m2} is a free slice"
    );

    let before = material.clone();
    let plan_before = Plan {
        config: &config.with_defaults(),
        topology: &topology,
        material: &before,
    };
    let (m1_before, _) = etcd_env(&plan_before, "m1");
    assert!(material.cover(&kept, &[]).unwrap());
    let plan = Plan {
        config: &grown,
        topology: &kept,
        material: &material,
    };
    let (m1_after, _) = etcd_env(&plan, "m1");
    assert_eq!(
        m1_after, m1_before,
        "the first member runs with what it ran with"
    );
    let (m2_env, m2_steps) = etcd_env(&plan, "m2");
    assert!(
        m2_env.contains("ETCD_INITIAL_CLUSTER_STATE=existing"),
        "{m2_env}"
    );
    assert!(
        m2_env.contains("ETCD_INITIAL_CLUSTER=m1=https://192.0.2.1:2380,m2=https://192.0.2.2:2380"),
        "{m2_env}"
    );
    let add = m2_steps
        .iter()
        .position(|name| name == "add m2 to etcd's members")
        .unwrap();
    let start = m2_steps.iter().position(|name| name == "etcd").unwrap();
    let promote = m2_steps
        .iter()
        .position(|name| name.starts_with("promote m2"))
        .unwrap();
    assert!(add < start && start < promote, "{m2_steps:?}");
    let (_, m1_steps) = etcd_env(&plan, "m1");
    assert!(
        !m1_steps.iter().any(|name| name.contains("members")),
        "{m1_steps:?}"
    );

    // A machine that left is forgotten: joining again under its name, it
    // gets certificates for its new address.
    material.forget(&["m2".into()]);
    assert!(!material.nodes.contains_key("m2"));
}

#[test]
fn a_leaving_member_is_removed_by_its_peer_address_from_a_member_that_stays() {
    let config = parse(FILE).unwrap().with_defaults();
    let topology = Topology::of(&config).unwrap();
    let (m1, w1) = (
        topology.machine("m1").unwrap(),
        topology.machine("w1").unwrap(),
    );
    let Step::Run(command) = plan::remove_member(m1, w1) else {
        panic!("a command")
    };
    assert!(
        command.script.contains(", https://192.0.2.11:2380, "),
        "{}",
        command.script
    );
    assert!(
        command
            .script
            .contains("--endpoints=https://192.0.2.1:2379"),
        "{}",
        command.script
    );
    let forgotten = plan::forget_routes(&[w1]);
    let Step::Run(command) = &forgotten[0] else {
        panic!("a command")
    };
    let slice = w1.pod_subnet.unwrap();
    assert!(
        command.script.contains(&format!("ip route del {slice}")),
        "{}",
        command.script
    );
}

#[test]
fn a_slice_stays_taken_until_its_machine_has_left_and_names_stay_plain() {
    let config = parse(FILE).unwrap().with_defaults();
    let topology = Topology::of(&config).unwrap();
    let mut kept = std::collections::BTreeMap::new();
    for machine in &topology.machines {
        if let Some(slice) = machine.pod_subnet {
            kept.insert(machine.name.clone(), slice);
        }
    }
    // w1 is out of the file but still in the material: a new worker gets
    // neither its slice nor w2's.
    let shrunk = parse(FILE)
        .unwrap()
        .without(&["w1".into()])
        .joined(&JoinFile {
            workers: vec![machine("w3", "192.0.2.13")],
            ..JoinFile::default()
        })
        .unwrap()
        .with_defaults();
    let laid = Topology::keeping(&shrunk, &kept).unwrap();
    let w3 = laid.machine("w3").unwrap().pod_subnet.unwrap();
    assert!(!kept.values().any(|slice| *slice == w3), "{w3} {kept:?}");

    let mut odd = config.clone();
    odd.workers[0].arch = "amd64\nETCD_X=1".into();
    let refused = crate::refusals::refusals(&odd);
    assert!(
        refused
            .iter()
            .any(|problem| problem.field == "workers[0].arch"),
        "{refused:?}"
    );
}

#[test]
fn a_drain_remembers_a_node_cordoned_before_it_and_fails_when_the_api_does() {
    let config = parse(FILE).unwrap().with_defaults();
    let topology = Topology::of(&config).unwrap();
    let w1 = topology.machine("w1").unwrap();
    let Step::Run(drain) = crate::commands::drain(w1, std::time::Duration::from_secs(5)) else {
        panic!("a command")
    };
    assert!(
        drain.script.contains("*NotFound*) exit 0"),
        "{}",
        drain.script
    );
    assert!(
        drain.script.contains("cordoned-before-drain-w1"),
        "{}",
        drain.script
    );
    let Step::Run(uncordon) = crate::commands::uncordon(w1) else {
        panic!("a command")
    };
    assert!(
        uncordon
            .script
            .contains("if [ -e /etc/kubernetes/.wasmco/cordoned-before-drain-w1 ]")
    );
    let m1 = topology.machine("m1").unwrap();
    let Step::Run(remove) = plan::remove_member(m1, w1) else {
        panic!("a command")
    };
    assert!(remove.script.starts_with("members=$("), "{}", remove.script);
    assert!(remove.script.contains("|| exit 1"), "{}", remove.script);
}
