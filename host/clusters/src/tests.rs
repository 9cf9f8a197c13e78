//! The layout, the refusals and the rendered steps of a deploy file with
//! every role, checked without machines.

use wasmco_core::eggo::{DeployConfig, dst_allowed, parse};
use wasmco_pki::ClusterPki;

use crate::material::ClusterMaterial;
use crate::plan::{self, Archive, Plan, Step};
use crate::refusals::refusals;
use crate::topology::Topology;

const FILE: &str = r#"
cluster-id: three
username: root
password: secret
masters:
- {name: m1, ip: 192.0.2.1, port: 22}
- {name: m2, ip: 192.0.2.2, port: 22}
workers:
- {name: m2, ip: 192.0.2.2, port: 22}
- {name: w1, ip: 192.0.2.11, port: 22}
etcds:
- {name: e1, ip: 192.0.2.21, port: 22}
- {name: m1, ip: 192.0.2.1, port: 22}
- {name: e3, ip: 192.0.2.23, port: 22}
runtime: containerd
network: {podcidr: 10.244.0.0/16, plugin: bridge}
config-extra-args:
- name: kube-apiserver
  extra-args: {--v: "4", --audit-log-path: /var/log/audit.log}
- name: etcd
  extra-args: {--quota-backend-bytes: "8589934592"}
install:
  package-source: {type: tar.gz, srcpath: {amd64: /tmp/packages.tar.gz}}
  kubernetes-master:
  - {name: kube-apiserver, type: bin, dst: /usr/bin}
  kubernetes-worker:
  - {name: kubelet, type: bin, dst: /usr/bin}
  addition:
    worker:
    - {name: tune.sh, type: shell, schedule: prejoin, TimeOut: 45s}
"#;

fn config() -> DeployConfig {
    parse(FILE).expect("the file parses").with_defaults()
}

/// Runs `check` on the plan of [`FILE`].
fn with_plan(check: impl FnOnce(&Plan<'_>)) {
    let config = config();
    let topology = Topology::of(&config).expect("a topology");
    let material = material(&topology);
    check(&Plan {
        config: &config,
        topology: &topology,
        material: &material,
    });
}

fn material(topology: &Topology) -> ClusterMaterial {
    let pki = ClusterPki::create(&topology.cluster).expect("a CA");
    ClusterMaterial::create(topology, pki, &["api.example.com".to_owned()]).expect("material")
}

#[test]
fn machines_are_merged_by_name_with_every_role() {
    let topology = Topology::of(&config()).expect("a topology");
    let roles: Vec<(&str, bool, bool, bool)> = topology
        .machines
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.roles.master,
                m.roles.worker,
                m.roles.etcd,
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("m1", true, false, true),
            ("m2", true, true, false),
            ("w1", false, true, false),
            ("e1", false, false, true),
            ("e3", false, false, true),
        ]
    );
    // Only machines that run pods get a slice of the pod range.
    let subnets: Vec<Option<String>> = topology
        .machines
        .iter()
        .map(|m| m.pod_subnet.map(|net| net.to_string()))
        .collect();
    assert_eq!(
        subnets,
        [
            None,
            Some("10.244.0.0/24".into()),
            Some("10.244.1.0/24".into()),
            None,
            None
        ]
    );
    assert_eq!(topology.endpoint, "192.0.2.1:6443");
    assert_eq!(topology.api_service_ip.to_string(), "10.32.0.1");
    assert_eq!(topology.first_master().map(|m| m.name.as_str()), Some("m1"));
}

#[test]
fn one_name_with_two_addresses_is_refused_by_field() {
    let mut config = config();
    config.workers[1].name = "m1".into();
    let problems = Topology::of(&config).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].field, "workers[1]");
    assert!(problems[0].reason.contains("192.0.2.1"), "{problems:?}");
}

#[test]
fn what_wasmco_does_not_do_is_refused_by_field() {
    assert_eq!(refusals(&config()), Vec::new());
    let mut config = config();
    config.runtime = "docker".into();
    config.loadbalance.ip = "192.0.2.99".into();
    config.enable_kubelet_serving = true;
    let fields: Vec<String> = refusals(&config).into_iter().map(|p| p.field).collect();
    assert_eq!(fields, ["runtime", "loadbalance", "enable-kubelet-serving"]);
}

/// Every step of every phase for every machine.
fn all_steps(plan: &Plan<'_>) -> Vec<(String, Step)> {
    let archive = Archive {
        local: wasmco_nodes::LocalFile {
            path: "/tmp/packages.tar.gz".into(),
            digest: "0".repeat(64),
        },
        name: "packages.tar.gz".into(),
    };
    let mut steps = Vec::new();
    for machine in &plan.topology.machines {
        let mut add = |list: Vec<Step>| {
            steps.extend(list.into_iter().map(|step| (machine.name.clone(), step)));
        };
        add(plan::infrastructure(plan, machine, Some(&archive)));
        add(plan::etcd(plan, machine));
        add(plan::control_plane(plan, machine));
        add(plan::worker_prepare(plan, machine));
        add(plan::worker_start(plan, machine));
    }
    steps
}

#[test]
fn every_file_a_deploy_writes_is_inside_eggos_allow_list() {
    with_plan(|plan| {
        let steps = all_steps(plan);
        assert!(steps.len() > 60, "{}", steps.len());
        for (machine, step) in &steps {
            let path = match step {
                Step::Put(file) => &file.path,
                Step::Upload { path, .. } => path,
                _ => continue,
            };
            let (dir, name) = path.rsplit_once('/').unwrap();
            assert!(dst_allowed(dir, name), "{machine}: {path}");
        }
        // Keys are readable by their owner only.
        for (_, step) in &steps {
            if let Step::Put(file) = step
                && (file.path.ends_with(".key")
                    || file.path.ends_with(".conf")
                    || file.path.ends_with(".kubeconfig"))
            {
                assert_eq!(file.mode, 0o600, "{}", file.path);
            }
        }
    });
}

#[test]
fn roles_decide_what_each_machine_gets() {
    with_plan(|plan| {
        let services = |name: &str| -> Vec<String> {
            all_steps(plan)
                .into_iter()
                .filter(|(machine, _)| machine == name)
                .filter_map(|(_, step)| match step {
                    Step::Start { service, .. } => Some(service),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            services("m1"),
            [
                "wasmco-kernel",
                "etcd",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler"
            ]
        );
        assert_eq!(
            services("w1"),
            [
                "wasmco-kernel",
                "containerd",
                "wasmco-pod-routes",
                "kubelet",
                "kube-proxy"
            ]
        );
        assert_eq!(services("e3"), ["wasmco-kernel", "etcd"]);

        // And which of the archive's members each is sent.
        let left_out = |name: &str| -> Vec<String> {
            let machine = plan.topology.machines.iter().find(|m| m.name == name);
            plan::left_out(plan, &machine.expect("the machine").roles)
                .into_iter()
                .collect()
        };
        assert_eq!(left_out("w1"), ["bin/kube-apiserver"]);
        assert_eq!(left_out("m1"), ["bin/kubelet", "file/tune.sh"]);
        assert!(left_out("m2").is_empty(), "a master that is a worker too");
    });
}

#[test]
fn etcd_and_the_api_server_are_configured_from_the_file() {
    with_plan(|plan| {
        let file = |machine: &str, path: &str| -> String {
            all_steps(plan)
                .into_iter()
                .find_map(|(name, step)| match step {
                    Step::Put(file) if name == machine && file.path == path => {
                        Some(String::from_utf8(file.contents).unwrap())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{machine} gets {path}"))
        };
        let etcd = file("e3", "/etc/kubernetes/etcd.conf");
        assert!(etcd.contains(
            "ETCD_INITIAL_CLUSTER=m1=https://192.0.2.1:2380,e1=https://192.0.2.21:2380,e3=https://192.0.2.23:2380\n"
        ), "{etcd}");
        assert!(
            etcd.contains("ETCD_QUOTA_BACKEND_BYTES=8589934592\n"),
            "{etcd}"
        );
        let apiserver = file("m2", "/usr/lib/systemd/system/kube-apiserver.service");
        for flag in [
            "--advertise-address=192.0.2.2",
            "--etcd-servers=https://192.0.2.1:2379,https://192.0.2.21:2379,https://192.0.2.23:2379",
            "--service-cluster-ip-range=10.32.0.0/16",
            "--v=4",
            "--audit-log-path=/var/log/audit.log",
        ] {
            assert!(apiserver.contains(flag), "{flag} in {apiserver}");
        }
        let routes = file("w1", "/usr/lib/systemd/system/wasmco-pod-routes.service");
        assert!(
            routes.contains("ip route replace 10.244.0.0/24 via 192.0.2.2"),
            "{routes}"
        );
    });
}

#[test]
fn the_material_keeps_its_secrets_out_of_debug_and_covers_new_machines() {
    let config = config();
    let mut topology = Topology::of(&config).unwrap();
    let mut material = material(&topology);
    let shown = format!("{material:?}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    assert!(!shown.contains(&material.bootstrap_token), "{shown}");
    let (id, secret) = material.bootstrap_token.split_once('.').unwrap();
    assert_eq!((id.len(), secret.len()), (6, 16));
    assert!(
        material
            .bootstrap_token
            .chars()
            .all(|c| c == '.' || c.is_ascii_lowercase() || c.is_ascii_digit())
    );

    let before = material.nodes["m1"].apiserver.clone();
    let mut added = topology.machines[2].clone();
    added.name = "w2".into();
    topology.machines.push(added);
    assert!(material.cover(&topology, &[]).unwrap());
    assert!(material.nodes.contains_key("w2"));
    assert_eq!(
        material.nodes["m1"].apiserver, before,
        "what was made stays"
    );
    assert!(!material.cover(&topology, &[]).unwrap());
}

#[test]
fn the_template_is_one_wasmco_deploys() {
    let template = crate::refusals::template().with_defaults();
    assert_eq!(template.check(), Vec::new(), "Eggo's checks");
    assert_eq!(crate::refusals(&template), Vec::new(), "wasmco's refusals");
    let text = wasmco_core::eggo::to_yaml(&crate::refusals::template()).expect("YAML");
    let back = wasmco_core::eggo::parse(&text).expect("it parses back");
    assert_eq!(back.runtime, "containerd");
}

/// The shell words of the `rm -rf -- …` in `script`.
fn removed(script: &str) -> Vec<String> {
    let after = script.split_once("rm -rf -- ").map_or("", |(_, rest)| rest);
    let words = after.split_once(" && ").map_or(after, |(words, _)| words);
    shlex::split(words).unwrap_or_default()
}

fn script_of(step: &Step) -> &str {
    match step {
        Step::Run(command) => &command.script,
        _ => "",
    }
}

#[test]
fn a_cleanup_stops_pods_first_and_removes_only_what_the_deploy_put() {
    with_plan(|plan| {
        for machine in &plan.topology.machines {
            let steps = plan::teardown(plan, machine);
            let names: Vec<&str> = steps.iter().map(Step::name).collect();
            let at = |name: &str| names.iter().position(|step| *step == name);
            if machine.roles.worker {
                let pods = at("stop the kubelet and kube-proxy").expect("the kubelet stopped");
                let killed = at("kill the pods' containers").expect("containers killed");
                let others = at("stop the cluster's services").expect("containerd stopped");
                assert!(pods < killed && killed < others, "{names:?}");
                assert!(script_of(&steps[others]).contains("containerd"));
            } else {
                assert_eq!(at("kill the pods' containers"), None, "{names:?}");
            }
            let data = at("remove the cluster's data").expect("the data removed");
            assert!(
                script_of(&steps[data]).contains("/var/lib/etcd /var/lib/kubelet /var/lib/cni")
            );
            let removal = at("remove what the deploy put here").expect("a removal");
            let paths = removed(script_of(&steps[removal]));
            for path in &paths {
                let (dir, name) = path.rsplit_once('/').unwrap();
                assert!(
                    dst_allowed(dir, name) || path == "/etc/kubernetes/.wasmco",
                    "{}: {path}",
                    machine.name
                );
            }
            let has = |path: &str| paths.iter().any(|removed| removed == path);
            assert_eq!(
                has("/usr/bin/kubelet"),
                machine.roles.worker,
                "{}",
                machine.name
            );
            assert_eq!(has("/usr/bin/kube-apiserver"), machine.roles.master);
            // The binary an upgrade replaced goes too.
            assert_eq!(
                has("/usr/bin/kube-apiserver.wasmco-previous"),
                machine.roles.master
            );
            assert!(has("/usr/lib/systemd/system/wasmco-kernel.service"));
            assert!(!has("/etc/kubernetes") && !has("/usr/bin"), "{paths:?}");
            let packages = removed(script_of(plan::postcleanup(plan, machine).last().unwrap()));
            for sent in ["packages.tar", "packages.tar.gz", "bin", "image"] {
                assert!(
                    packages.contains(&format!("/root/.eggo/package/{sent}")),
                    "{packages:?}"
                );
            }
        }
    });
}

/// A package archive holding `file/NAME` for each of `files`.
fn archive_of(dir: &std::path::Path, files: &[(&str, &str)]) -> std::path::PathBuf {
    let path = dir.join("packages-amd64.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("./file/{name}"), text.as_bytes())
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
    path
}

#[test]
fn addons_are_the_archives_yaml_packages_then_coredns_as_the_file_says() {
    let dir = tempfile::tempdir().unwrap();
    let archive = archive_of(dir.path(), &[("net.yaml", "kind: ConfigMap\n")]);
    let file = FILE
        .replace("/tmp/packages.tar.gz", &archive.display().to_string())
        .replace(
            "  addition:\n",
            "  addition:\n    master:\n    - {name: net.yaml, type: yaml}\n    - {name: https://example.com/x.yaml, type: yaml}\n",
        )
        .replace(
            "network: {",
            "service: {dns: {imageversion: 1.11.1, replicas: 3}}\nnetwork: {",
        );
    let config = parse(&file).expect("the file parses");
    let deployment =
        crate::Deployment::prepare(&config, wasmco_nodes::Secret::Password("x".into()), None)
            .expect("a deployment");
    let addons = crate::addons(&deployment).expect("the addons");
    let sources: Vec<&str> = addons.iter().map(|addon| addon.source.as_str()).collect();
    // The URL is the first master's to fetch, as Eggo does.
    assert_eq!(sources, ["file/net.yaml", "coredns"]);
    assert_eq!(addons[0].manifests, "kind: ConfigMap\n");
    let objects: Vec<serde_json::Value> = addons[1]
        .manifests
        .split("\n---\n")
        .map(|object| serde_json::from_str(object).unwrap())
        .collect();
    let of = |kind: &str| objects.iter().find(|o| o["kind"] == kind).unwrap();
    assert_eq!(of("Service")["spec"]["clusterIP"], "10.32.0.10");
    let deployment_object = of("Deployment");
    assert_eq!(deployment_object["spec"]["replicas"], 3);
    assert_eq!(
        deployment_object["spec"]["template"]["spec"]["containers"][0]["image"],
        "coredns/coredns:1.11.1"
    );
    assert!(
        of("ConfigMap")["data"]["Corefile"]
            .as_str()
            .unwrap()
            .contains("kubernetes cluster.local in-addr.arpa")
    );

    // A `yaml` package the archive does not hold is named.
    let missing = file.replace("name: net.yaml", "name: gone.yaml");
    let deployment = crate::Deployment::prepare(
        &parse(&missing).unwrap(),
        wasmco_nodes::Secret::Password("x".into()),
        None,
    )
    .unwrap();
    let error = crate::addons(&deployment).unwrap_err().to_string();
    assert!(
        error.contains("file/gone.yaml") && error.contains("not in the package archive"),
        "{error}"
    );
}
