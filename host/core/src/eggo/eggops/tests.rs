//! Eggops' own example (`config/eggops_cluster.yaml`) read as wasmco reads it.

use std::collections::BTreeMap;

use super::*;

const EXAMPLE: &str = include_str!("../../../../../tests/fixtures/eggo/eggops_cluster.yaml");

fn documents() -> Vec<EggopsDocument> {
    serde_norway::Deserializer::from_str(EXAMPLE)
        .map(|doc| {
            let value: serde_json::Value = serde::Deserialize::deserialize(doc).expect("YAML");
            document(&value)
                .expect("an Eggops document")
                .expect("one of Eggops'")
        })
        .collect()
}

#[test]
fn eggops_own_example_reads_whole() {
    let docs = documents();
    let kinds: Vec<&str> = docs
        .iter()
        .map(|doc| match doc {
            EggopsDocument::Machine(..) => "Machine",
            EggopsDocument::Infrastructure(..) => "Infrastructure",
            EggopsDocument::Cluster(..) => "Cluster",
            EggopsDocument::Login(..) => "Login",
            EggopsDocument::Skipped(kind, ..) => kind.as_str(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "Login",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "Machine",
            "Machine",
            "Infrastructure",
            "Cluster"
        ]
    );
    let EggopsDocument::Login(name, login) = &docs[1] else {
        panic!("the secret");
    };
    assert_eq!(name, "secret-example");
    assert_eq!(login.username, "root");
    assert_eq!(login.password.as_deref(), Some("123456"));
}

#[test]
fn the_example_cluster_becomes_a_deploy_file_on_the_machines_picked() {
    let docs = documents();
    let mut machines = BTreeMap::new();
    let (mut infrastructure, mut request) = (None, None);
    for doc in docs {
        match doc {
            EggopsDocument::Machine(name, spec) => {
                machines.insert(name, spec);
            }
            EggopsDocument::Infrastructure(_, spec) => infrastructure = Some(spec),
            EggopsDocument::Cluster(name, spec) => request = Some((name, spec)),
            _ => {}
        }
    }
    let (name, request) = request.expect("the cluster");
    let wanted = (&request.master_require, &request.worker_require);
    // Eggops' example names both machines `machine1`: one node name each,
    // so no worker is left to pick, and the reason says why.
    let short = pick(&machines, &BTreeMap::new(), wanted.0, wanted.1).unwrap_err();
    assert!(
        short.contains("machine2-example is named machine1 as machine1-example is"),
        "{short}"
    );
    let mut renamed = machines.clone();
    renamed
        .get_mut("machine2-example")
        .expect("the second machine")
        .hostname = "machine2".into();
    let picked =
        pick(&renamed, &BTreeMap::new(), wanted.0, wanted.1).expect("two machines for two roles");
    assert_eq!(picked.masters, ["machine1-example"]);
    assert_eq!(picked.workers, ["machine2-example"]);
    let parts = infrastructure
        .expect("the infrastructure")
        .deploy_parts("/var/lib/wasmco/packages")
        .expect("its install");
    let chosen = [
        (
            "machine1-example",
            &machines["machine1-example"],
            Role::Master,
        ),
        (
            "machine2-example",
            &machines["machine2-example"],
            Role::Worker,
        ),
    ];
    // Put together anyway, the deploy file is refused, naming them.
    let clash = request
        .deploy_config(&name, &chosen, ("root", "123456"), Some(parts.clone()))
        .unwrap_err();
    assert_eq!(clash.field, "spec.hostname");
    assert!(
        clash
            .reason
            .contains("machine1-example and machine2-example"),
        "{clash:?}"
    );
    let mut second = machines["machine2-example"].clone();
    second.hostname = "machine2".into();
    let chosen = [chosen[0], ("machine2-example", &second, Role::Worker)];
    let config = request
        .deploy_config(&name, &chosen, ("root", "123456"), Some(parts))
        .expect("a deploy file");
    assert_eq!(config.cluster_id, "cluster-example");
    assert_eq!(config.masters[0].arch, "arm64");
    assert_eq!(config.workers[0].ip, "192.168.0.2");
    assert!(config.enable_kubelet_serving);
    let source = config.install.package_source.as_ref().expect("the archive");
    assert_eq!(
        source.srcpath["amd64"],
        "/var/lib/wasmco/packages/packages/packages-amd.tar.gz"
    );
    assert_eq!(config.open_ports.worker.len(), 2);
    assert_eq!(config.with_defaults().check(), Vec::new());
}
