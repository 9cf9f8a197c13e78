//! EMCO's own example flows (vendored unchanged in `tests/emco/`), run as
//! an EMCO user runs them: their charts packed by their `setup.sh`'s tar
//! commands, their files applied with `wasmco apply -f FILE -v values.yaml`
//! in their README's order against `wasmco dev`'s virtual clusters (and,
//! for multi-cluster and test-gac, real kube-apiservers), then deleted in
//! their order, leaving the clusters empty.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::cli::{Dev, repo};
use crate::kube_apiserver::{ApiServer, kubectl};
use crate::support::wait::wait_until;

/// A scratch copy of `tests/emco/` with our stand-ins for the files the
/// mirror does not hold (`tests/emco-stand-ins/`) laid over it.
struct Flows {
    root: tempfile::TempDir,
}

impl Flows {
    fn new() -> Flows {
        let root = tempfile::tempdir().unwrap();
        for source in ["tests/emco/.", "tests/emco-stand-ins/."] {
            let copied = Command::new("cp")
                .arg("-r")
                .arg(repo().join(source))
                .arg(root.path())
                .status()
                .unwrap();
            assert!(copied.success(), "cp {source}");
        }
        Flows { root }
    }

    fn dir(&self, flow: &str) -> PathBuf {
        self.root.path().join(flow)
    }

    /// Runs a `tar` command of the flow's `setup.sh`, in the flow's folder.
    fn tar(&self, flow: &str, args: &str) {
        std::fs::create_dir_all(self.dir(flow).join("output")).unwrap();
        let status = Command::new("tar")
            .args(args.split_whitespace())
            .current_dir(self.dir(flow))
            .status()
            .unwrap();
        assert!(status.success(), "tar {args}");
    }

    /// Writes the values the flow's `setup.sh` writes (its `cat << NET >
    /// values.yaml` here-document), its shell variables set as `vars` says.
    fn setup_values(&self, flow: &str, vars: &[(&str, &str)]) {
        let values = self.here_document(flow, "cat << NET > values.yaml\n", 0, vars);
        self.values(flow, &values);
    }

    /// The here-document of the flow's `setup.sh` that follows the
    /// `nth` (from 0) `opening`, its shell variables set as `vars` says.
    fn here_document(
        &self,
        flow: &str,
        opening: &str,
        nth: usize,
        vars: &[(&str, &str)],
    ) -> String {
        let script = std::fs::read_to_string(self.dir(flow).join("setup.sh")).unwrap();
        let rest = script
            .split(opening)
            .nth(nth + 1)
            .unwrap_or_else(|| panic!("{flow}/setup.sh has no {nth}th {opening:?}"));
        let mut text: String = rest
            .lines()
            .take_while(|line| line.trim() != "NET")
            .map(|line| format!("{line}\n"))
            .collect();
        // Longest first: a variable's name may begin another's.
        let mut vars = vars.to_vec();
        vars.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
        for (name, value) in vars {
            text = text.replace(&format!("${name}"), value);
        }
        text
    }

    /// The flow's `apply.sh` (test-gac's takes its test file, `extra`):
    /// prerequisites, the logical cloud instantiated, apps, intents, then
    /// the DIG instantiated.
    fn apply_sh(&self, dev: &Dev, flow: &str, extra: &[&str]) {
        let head = [
            "controllers.yaml",
            "projects.yaml",
            "clusters.yaml",
            "logicalclouds.yaml",
            "instantiatelc.yaml",
            "apps.yaml",
            "intents.yaml",
        ];
        let files: Vec<&str> = head
            .into_iter()
            .chain(extra.iter().copied())
            .chain(["instantiate.yaml"])
            .collect();
        self.run(dev, "apply", flow, &files);
    }

    /// The flow's `delete.sh`: terminate and wait until Terminated, delete
    /// `deployment` (its intents and apps files), terminate the logical
    /// cloud, then delete the prerequisites.
    fn delete_sh(&self, dev: &Dev, flow: &str, dig: &str, deployment: &[&str]) {
        self.run(dev, "apply", flow, &["terminate.yaml"]);
        dev.ok(&["status", dig, "--timeout", "90s"]);
        for file in deployment {
            self.run(dev, "delete", flow, &[file]);
        }
        self.run(dev, "apply", flow, &["terminatelc.yaml"]);
        for file in [
            "logicalclouds.yaml",
            "clusters.yaml",
            "projects.yaml",
            "controllers.yaml",
        ] {
            self.run(dev, "delete", flow, &[file]);
        }
    }

    /// Writes the values `setup.sh` would write.
    fn values(&self, flow: &str, yaml: &str) {
        std::fs::write(self.dir(flow).join("values.yaml"), yaml).unwrap();
    }

    fn file(&self, flow: &str, file: &str) -> String {
        self.dir(flow).join(file).to_str().unwrap().to_owned()
    }

    /// `wasmco VERB -f FILE -v values.yaml`, which must succeed, for each
    /// file in order; what it printed. Nothing may be unsupported.
    fn run(&self, dev: &Dev, verb: &str, flow: &str, files: &[&str]) -> String {
        let values = self.file(flow, "values.yaml");
        let mut printed = String::new();
        for file in files {
            let out = dev.ok(&[verb, "-f", &self.file(flow, file), "-v", &values]);
            let left_out: Vec<&str> = out
                .lines()
                .filter(|l| l.starts_with("unsupported") || l.starts_with("failed"))
                .collect();
            assert!(left_out.is_empty(), "{verb} {flow}/{file}:\n{out}");
            printed += &out;
        }
        printed
    }
}

fn kubeconfig(dev: &Dev, n: u32) -> String {
    dev.kubeconfig_path(n).to_str().unwrap().to_owned()
}

/// A cluster a flow deploys to: one of `wasmco dev`'s, or a real API server.
#[derive(Clone, Copy)]
enum On<'a> {
    Dev(&'a Dev, u32),
    Real(&'a ApiServer),
}

impl On<'_> {
    fn kubeconfig(&self) -> String {
        match self {
            On::Dev(dev, n) => kubeconfig(dev, *n),
            On::Real(real) => real.kubeconfig_path.to_str().unwrap().to_owned(),
        }
    }

    /// The objects of `collection` (`apis/apps/v1/daemonsets`).
    fn objects(&self, collection: &str) -> Vec<Value> {
        match self {
            On::Dev(dev, n) => dev.objects(*n, collection),
            On::Real(real) => {
                let out = kubectl(
                    &real.kubeconfig_path,
                    &["get", "--raw", &format!("/{collection}")],
                );
                assert!(out.status.success(), "{out:?}");
                let list: Value = serde_json::from_slice(&out.stdout).unwrap();
                list["items"].as_array().cloned().unwrap_or_default()
            }
        }
    }

    /// The names of `collection`'s objects carrying `app: <app>`.
    fn labelled(&self, collection: &str, app: &str) -> Vec<String> {
        self.objects(collection)
            .iter()
            .filter(|o| o["metadata"]["labels"]["app"] == app)
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The object `name` of `collection`.
    fn object(&self, collection: &str, name: &str) -> Value {
        self.objects(collection)
            .into_iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {collection} {name}"))
    }

    /// Waits until `check` holds: a real API server runs no controllers,
    /// so what rsync applied is read back rather than waited Ready for.
    fn eventually(&self, what: &str, check: impl Fn(&Self) -> bool) {
        wait_until(what, Duration::from_secs(60), || check(self));
    }
}

/// The names of `collection`'s objects in dev cluster `n` that carry
/// `app: <app>`.
fn labelled(dev: &Dev, n: u32, collection: &str, app: &str) -> Vec<String> {
    On::Dev(dev, n).labelled(collection, app)
}

/// How EMCO's scripts pack collectd and the operator, with their profiles
/// (`_common.sh` and test-gac's and dcm-advanced's `setup.sh` alike).
const COLLECTD_AND_OPERATOR: [&str; 4] = [
    "-czf output/collectd.tar.gz -C ../helm_charts/collectd/helm .",
    "-czf output/collectd_profile.tar.gz -C ../helm_charts/collectd/profile .",
    "-czf output/operator.tar.gz -C ../helm_charts/operators-latest/helm .",
    "-czf output/operator_profile.tar.gz -C ../helm_charts/operators-latest/profile .",
];

/// multi-cluster's `setup.sh -a collectd:cluster1:cluster2 -b operator:cluster1`:
/// its values, and the tar commands of `_common.sh` for those two apps.
fn multi_cluster_setup(flows: &Flows, clusters: [On; 2], flow: &str, extra: &str) {
    for tar in COLLECTD_AND_OPERATOR {
        flows.tar(flow, tar);
    }
    flows.values(
        flow,
        &format!(
            "PackagesPath: output\nClusterLabel: edge-cluster\nAdminCloud: default\n\
             CompositeApp: test-composite-app\nCompositeProfile: test-composite-profile\n\
             GenericPlacementIntent: test-placement-intent\nIntent: intent\n\
             RsyncPort: 30431\nGacPort: 30433\nOvnPort: 30432\nDtcPort: 30448\nNpsPort: 30438\n\
             HostIP: 127.0.0.1\n\
             Clusters:\n- Name: cluster1\n  KubeConfig: {}\n- Name: cluster2\n  KubeConfig: {}\n{extra}",
            clusters[0].kubeconfig(),
            clusters[1].kubeconfig()
        ),
    );
}

/// multi-cluster's README steps, then its delete steps, on `clusters`.
fn multi_cluster(dev: &Dev, clusters: [On; 2]) {
    let flows = Flows::new();
    multi_cluster_setup(
        &flows,
        clusters,
        "multi-cluster",
        "ProjectName: proj-multi-1\nClusterProvider: provider-multi\n\
         DeploymentIntent: test-deployment-intent\n\
         Applist:\n- Name: collectd\n  Cluster: [cluster1, cluster2]\n\
         - Name: operator\n  Cluster: [cluster1]\n",
    );
    let files = [
        "00-controllers.yaml",
        "01-prerequisites.yaml",
        "02-instantiate-lc.yaml",
        "03-deployment-intent.yaml",
        "04-deployment-instantiate.yaml",
    ];
    let applied = flows.run(dev, "apply", "multi-cluster", &files);
    // EMCO's controllers by host and port bind the built-in components.
    for controller in ["gac", "ovnaction", "dtc"] {
        assert!(
            applied.contains(&format!("controllers/{controller}")),
            "{applied}"
        );
    }
    // Virtual clusters make workloads Ready; a real API server without its
    // controllers never does, so there the objects are read back instead.
    if let On::Dev(..) = clusters[0] {
        let status = dev.ok(&["status", "test-deployment-intent", "--timeout", "90s"]);
        assert!(status.contains("collectd"), "{status}");
    }
    let (daemonsets, statefulsets) = ("apis/apps/v1/daemonsets", "apis/apps/v1/statefulsets");
    // collectd on both clusters (released as the DIG's version, with the
    // profile's values rendered in), the operator's etcd on cluster1 only.
    for cluster in clusters {
        cluster.eventually("collectd lands", |c| {
            c.labelled(daemonsets, "collectd") == ["r1-collectd"]
        });
        let config = cluster.object("api/v1/configmaps", "r1-collectd-config");
        assert!(
            config["data"]["collectd.conf"]
                .as_str()
                .unwrap()
                .contains("Interval 5"),
            "{config}"
        );
    }
    clusters[0].eventually("etcd lands", |c| {
        c.labelled(statefulsets, "etcd") == ["etcd"]
    });
    assert!(clusters[1].labelled(statefulsets, "etcd").is_empty());
    let mut reversed = files;
    reversed.reverse();
    flows.run(dev, "delete", "multi-cluster", &reversed);
    for cluster in clusters {
        assert!(cluster.labelled(daemonsets, "collectd").is_empty());
        assert!(cluster.labelled(statefulsets, "etcd").is_empty());
        assert!(cluster.labelled("api/v1/configmaps", "collectd").is_empty());
    }
}

#[test]
fn multi_cluster_deploys_collectd_on_both_clusters_and_the_operator_on_one() {
    let dev = Dev::start();
    multi_cluster(&dev, [On::Dev(&dev, 1), On::Dev(&dev, 2)]);
    dev.assert_no_projects();
    dev.assert_clusters_empty();
}

#[test]
fn multi_cluster_runs_on_two_real_api_servers() {
    let one = ApiServer::start("emco-multi-cluster-1");
    let two = ApiServer::start("emco-multi-cluster-2");
    let dev = Dev::start();
    multi_cluster(&dev, [On::Real(&one), On::Real(&two)]);
}

#[test]
fn test_update_moves_collectd_and_rollback_brings_it_back() {
    let dev = Dev::start();
    let flows = Flows::new();
    multi_cluster_setup(
        &flows,
        [On::Dev(&dev, 1), On::Dev(&dev, 2)],
        "test-update",
        "ProjectName: proj-update-1\nClusterProvider: provider-update\n\
         DeploymentIntent: test-deployment-intent\nAPP1: collectd\n\
         Applist:\n- Name: collectd\n  Cluster: [cluster1]\n  UpdateCluster: [cluster2]\n",
    );
    let on = |n| labelled(&dev, n, "apis/apps/v1/daemonsets", "collectd");
    let setup = [
        "01-prerequisites.yaml",
        "02-deployment-intent.yaml",
        "03-instantiation.yaml",
    ];
    flows.run(&dev, "apply", "test-update", &setup);
    dev.ok(&["status", "test-deployment-intent", "--timeout", "90s"]);
    assert_eq!((on(1).len(), on(2).len()), (1, 0));
    flows.run(
        &dev,
        "update",
        "test-update",
        &["04-update-deployment-intent.yaml"],
    );
    flows.run(&dev, "apply", "test-update", &["05-update.yaml"]);
    dev.ok(&["status", "test-deployment-intent", "--timeout", "90s"]);
    assert_eq!((on(1).len(), on(2).len()), (0, 1));
    flows.run(&dev, "apply", "test-update", &["06-rollback.yaml"]);
    dev.ok(&["status", "test-deployment-intent", "--timeout", "90s"]);
    assert_eq!((on(1).len(), on(2).len()), (1, 0));
    let mut reversed = setup;
    reversed.reverse();
    flows.run(&dev, "delete", "test-update", &reversed);
    assert_eq!((on(1).len(), on(2).len()), (0, 0));
    dev.assert_clusters_empty();
}

/// When dev cluster `n`'s object `name` of `collection` was made.
fn created(dev: &Dev, n: u32, collection: &str, name: &str) -> std::time::SystemTime {
    let object = object(dev, n, collection, name);
    let stamp = object["metadata"]["creationTimestamp"].as_str().unwrap();
    humantime::parse_rfc3339(stamp).unwrap()
}

/// test-dependency as its Readme runs it: `apply.sh` (its `setup.sh`'s
/// values, and `_common.sh`'s tar commands for its three apps), then
/// `delete.sh`. collectd waits for the operator and the operator for
/// nginx (a chart with pre- and post-install hooks), each Ready and then
/// 10 s more.
///
/// The mirror's `projects.yaml` holds the logical cloud's instantiate (what
/// `instantiatelc.yaml`, missing, should): it is applied in that file's
/// place and deleted in `terminatelc.yaml`'s (a delete of an instantiate
/// is its terminate), and our `project.yaml` makes the project.
#[test]
fn test_dependency_brings_nginx_then_the_operator_then_collectd_up() {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "test-dependency";
    let nginx = [
        "-czf output/nginx.tar.gz -C ../helm_charts/nginx/helm .",
        "-czf output/nginx_profile.tar.gz -C ../helm_charts/composite-cnf-firewall/profile manifest.yaml override_values.yaml",
    ];
    for tar in COLLECTD_AND_OPERATOR.iter().chain(&nginx) {
        flows.tar(flow, tar);
    }
    let (kube_path1, kube_path2) = (kubeconfig(&dev, 1), kubeconfig(&dev, 2));
    let values = flows.here_document(
        flow,
        "cat << NET > values.yaml\n",
        0,
        &[
            ("output_dir", "output"),
            ("host_ip", "127.0.0.1"),
            ("KUBE_PATH1", &kube_path1),
            ("KUBE_PATH2", &kube_path2),
        ],
    );
    flows.values(flow, &values);
    let files = [
        "controllers.yaml",
        "project.yaml",
        "clusters.yaml",
        "logicalclouds.yaml",
        "projects.yaml",
        "apps.yaml",
        "intents.yaml",
        "instantiate.yaml",
    ];
    flows.run(&dev, "apply", flow, &files);
    let dig = "test-deployment-intent";
    dev.ok(&["status", dig, "--timeout", "120s"]);
    let deployments = "apis/apps/v1/deployments";
    let daemonsets = "apis/apps/v1/daemonsets";
    for n in [1, 2] {
        assert_eq!(labelled(&dev, n, deployments, "nginx"), ["r1-nginx"]);
        assert_eq!(labelled(&dev, n, daemonsets, "collectd").len(), 1);
    }
    // The DIG's override value reached nginx's chart.
    let service = object(&dev, 1, "api/v1/services", "r1-nginx");
    assert_eq!(service["spec"]["type"], "NodePort", "{service}");
    // Each app after the one it depends on is Ready, and 10 s more.
    let collectd = &labelled(&dev, 1, daemonsets, "collectd")[0];
    let waited = created(&dev, 1, daemonsets, collectd)
        .duration_since(created(&dev, 1, deployments, "r1-nginx"))
        .unwrap();
    assert!(waited >= Duration::from_secs(20), "{waited:?}");
    flows.run(&dev, "apply", flow, &["terminate.yaml"]);
    dev.ok(&["status", dig, "--timeout", "90s"]);
    for file in [
        "intents.yaml",
        "apps.yaml",
        "projects.yaml",
        "logicalclouds.yaml",
        "clusters.yaml",
        "project.yaml",
        "controllers.yaml",
    ] {
        flows.run(&dev, "delete", flow, &[file]);
    }
    dev.assert_clusters_empty();
}

#[test]
fn dcm_advanced_adds_a_cluster_to_a_standard_cloud_and_deploys_in_its_namespace() {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "dcm-advanced";
    for tar in &COLLECTD_AND_OPERATOR[..2] {
        flows.tar(flow, tar);
    }
    // `setup.sh create` with `HOST_IP`, `KUBE_PATH1` and `KUBE_PATH2` set.
    flows.setup_values(
        flow,
        &[
            ("output_dir", "output"),
            ("host_ip", "127.0.0.1"),
            ("KUBE_PATH1", &kubeconfig(&dev, 1)),
            ("KUBE_PATH2", &kubeconfig(&dev, 2)),
        ],
    );
    let files = [
        "prerequisites.yaml",
        "1stcluster.yaml",
        "instantiate-lc.yaml",
        "2ndcluster.yaml",
        "update-lc.yaml",
        "deployment-intent.yaml",
        "instantiate-deployment-intent.yaml",
    ];
    flows.run(&dev, "apply", flow, &files);
    dev.ok(&[
        "status",
        "collectd-deployment-intent-group",
        "--timeout",
        "90s",
    ]);
    // On both clusters, the second added after the cloud was instantiated
    // (`update-lc.yaml`), in the standard cloud's namespace.
    for n in [1, 2] {
        assert_eq!(
            labelled(
                &dev,
                n,
                "apis/apps/v1/namespaces/standard-lc-ns/daemonsets",
                "collectd"
            ),
            ["update-test-1-collectd"],
            "dev-{n}"
        );
    }
    for file in [
        "instantiate-deployment-intent.yaml",
        "deployment-intent.yaml",
        "instantiate-lc.yaml",
        "2ndcluster.yaml",
        "1stcluster.yaml",
        "prerequisites.yaml",
    ] {
        flows.run(&dev, "delete", flow, &[file]);
    }
    dev.assert_clusters_empty();
    for n in [1, 2] {
        assert!(labelled(&dev, n, "apis/apps/v1/daemonsets", "collectd").is_empty());
    }
}

/// The object `name` of `collection` in dev cluster `n`.
fn object(dev: &Dev, n: u32, collection: &str, name: &str) -> Value {
    On::Dev(dev, n).object(collection, name)
}

/// test-gac's `apply.sh test-gac.yaml`, its README's update and rollback,
/// and its `delete.sh`, on `cluster`.
fn test_gac(dev: &Dev, cluster: On) {
    let flows = Flows::new();
    let flow = "test-gac";
    for tar in COLLECTD_AND_OPERATOR {
        flows.tar(flow, tar);
    }
    flows.setup_values(
        flow,
        &[
            ("KUBE_PATH", &cluster.kubeconfig()),
            ("CLUSTER_ISTIO_INGRESS_GATEWAY_ADDRESS", "192.168.121.26"),
            ("HOST_IP", "127.0.0.1"),
        ],
    );
    flows.apply_sh(dev, flow, &["test-gac.yaml"]);
    let dig = "collection-deployment-intent-group";
    // Ready on a virtual cluster; read back on a real API server.
    let settled = |revision_check: &dyn Fn(&On) -> bool| {
        if let On::Dev(..) = cluster {
            dev.ok(&["status", dig, "--timeout", "90s"]);
        }
        cluster.eventually("the DIG's objects land", revision_check);
    };
    let policies = "apis/networking.k8s.io/v1/networkpolicies";
    let statefulsets = "apis/apps/v1/statefulsets";
    let etcd_replicas = |replicas: u64| {
        move |c: &On| {
            c.objects(statefulsets)
                .iter()
                .any(|o| o["metadata"]["name"] == "etcd" && o["spec"]["replicas"] == replicas)
        }
    };
    settled(&etcd_replicas(1));
    cluster.object(policies, "netpol-web");
    // json patch: role db → database.
    assert_eq!(
        cluster.object(policies, "netpol-db")["spec"]["podSelector"]["matchLabels"]["role"],
        "database"
    );
    let configmaps = "api/v1/configmaps";
    let game = cluster.object(configmaps, "cm-game");
    assert!(
        game["data"]["info.json"]
            .as_str()
            .unwrap()
            .contains("chess"),
        "{game}"
    );
    let team = cluster.object(configmaps, "cm-team");
    assert_eq!(team["data"]["team_size"], "10", "{team}");
    assert!(team["data"]["game.properties"].is_string(), "{team}");
    assert!(
        team["data"]["user-interface.properties"].is_string(),
        "{team}"
    );
    // An existing object (the chart's etcd) patched: 3 replicas → 1 (what
    // `settled` waited for).
    // Readme: update the customization, update the DIG, roll it back.
    flows.run(dev, "update", flow, &["test-gac-update.yaml"]);
    flows.run(dev, "apply", flow, &["update.yaml"]);
    settled(&etcd_replicas(2));
    flows.run(dev, "apply", flow, &["rollback.yaml"]);
    settled(&etcd_replicas(1));
    flows.delete_sh(
        dev,
        flow,
        dig,
        &["test-gac.yaml", "intents.yaml", "apps.yaml"],
    );
    assert!(cluster.objects(policies).is_empty());
    assert!(cluster.labelled(statefulsets, "etcd").is_empty());
    for name in ["cm-game", "cm-team"] {
        assert!(
            !cluster
                .objects("api/v1/configmaps")
                .iter()
                .any(|c| c["metadata"]["name"] == name)
        );
    }
}

#[test]
fn test_gac_adds_patches_and_fills_objects_then_updates_and_rolls_back() {
    let dev = Dev::start();
    test_gac(&dev, On::Dev(&dev, 1));
    dev.assert_clusters_empty();
}

#[test]
fn test_gac_runs_on_a_real_api_server() {
    let real = ApiServer::start("emco-test-gac");
    let dev = Dev::start();
    test_gac(&dev, On::Real(&real));
}

/// What the dtc flows' `setup.sh create` does for the http server and
/// client: their charts and the profiles under `profiles` packed by its tar
/// commands; the shell variables its here-documents read.
fn http_apps_setup(
    dev: &Dev,
    flows: &Flows,
    flow: &str,
    profiles: &str,
) -> Vec<(&'static str, String)> {
    for app in ["http-server", "http-client"] {
        flows.tar(
            flow,
            &format!("-czf output/{app}.tgz -C ../../helm_charts/{app}/helm {app}"),
        );
        flows.tar(
            flow,
            &format!(
                "-czf output/{app}-profile.tar.gz -C ../../helm_charts/{app}/profile/{profiles}/{app}-profile ."
            ),
        );
    }
    vec![
        ("KUBE_PATH1", kubeconfig(dev, 1)),
        ("KUBE_PATH2", kubeconfig(dev, 2)),
        ("HOST_IP", "127.0.0.1".into()),
        (
            "HTTP_SERVER_IMAGE_REPOSITORY",
            "registry.local/my-custom-httptest-server".into(),
        ),
        (
            "HTTP_CLIENT_IMAGE_REPOSITORY",
            "registry.local/my-custom-httptest-client".into(),
        ),
    ]
}

/// dtc/network_policy as its `setup.sh` sets it up, with one cluster
/// (`KUBE_PATH2` unset: the files' `{{if .KubeConfig2}}` is false) or two.
fn dtc_network_policy(two_clusters: bool) {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "dtc/network_policy";
    // `setup.sh create` with `HOST_IP`, `KUBE_PATH1`, `IMAGE_REPOSITORY=
    // registry.local` (which names the two image repositories) and, for two
    // clusters, `KUBE_PATH2` set: its second here-document appends
    // `KubeConfig2` only then.
    let vars = http_apps_setup(&dev, &flows, flow, "network_policy_overrides");
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut values = flows.here_document(flow, "cat << NET > values.yaml\n", 0, &vars);
    if two_clusters {
        values += &flows.here_document(flow, "cat << NET >> values.yaml\n", 0, &vars);
    }
    flows.values(flow, &values);
    flows.apply_sh(&dev, flow, &[]);
    let dig = "collection-deployment-intent-group";
    dev.ok(&["status", dig, "--timeout", "90s"]);
    let server = if two_clusters { 2 } else { 1 };
    let deployments = "apis/apps/v1/deployments";
    assert_eq!(
        labelled(&dev, 1, deployments, "http-client"),
        ["r1-http-client"]
    );
    assert_eq!(
        labelled(&dev, server, deployments, "http-server"),
        ["r1-http-server"]
    );
    // The DIG's override reached the chart.
    let image = &object(&dev, server, deployments, "r1-http-server")["spec"]["template"]["spec"]["containers"]
        [0]["image"];
    assert_eq!(image, "registry.local/my-custom-httptest-server:1.1");
    // nps: the server's pods admit the client's, on the server's cluster.
    let policies = dev.objects(server, "apis/networking.k8s.io/v1/networkpolicies");
    assert_eq!(policies.len(), 1, "{policies:?}");
    let policy = &policies[0]["spec"];
    assert_eq!(
        policy["podSelector"]["matchLabels"]["app"], "http-server",
        "{policy}"
    );
    assert!(
        policy["ingress"].to_string().contains("http-client"),
        "{policy}"
    );
    if two_clusters {
        assert!(
            dev.objects(1, "apis/networking.k8s.io/v1/networkpolicies")
                .is_empty()
        );
    }
    flows.delete_sh(&dev, flow, dig, &["intents.yaml", "apps.yaml"]);
    assert!(
        dev.objects(server, "apis/networking.k8s.io/v1/networkpolicies")
            .is_empty()
    );
    dev.assert_clusters_empty();
}

#[test]
fn dtc_network_policy_on_one_cluster_takes_the_files_unset_value_as_false() {
    dtc_network_policy(false);
}

#[test]
fn dtc_network_policy_admits_the_client_on_the_servers_cluster() {
    dtc_network_policy(true);
}

/// dtc/service_discovery between two private clusters, as its README runs
/// it with `LC_LEVEL` 0 or 1: `setup.sh create` (private-cluster
/// profiles), `apply.sh`, then `delete.sh`. The server is on cluster 2,
/// its client on cluster 1, which gets the server's Service as a Service
/// without a selector and Endpoints at cluster 2's node, in the logical
/// cloud's namespace.
fn dtc_service_discovery(level: &str, namespace: &str) {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "dtc/service_discovery";
    let vars = http_apps_setup(
        &dev,
        &flows,
        flow,
        "service_discovery_overrides/private_cluster",
    );
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The first here-document, then the appended ones for
    // `PUBLIC_CLUSTER2=false` (the second) and the level (`0`: the third).
    let appended = |nth| flows.here_document(flow, "cat << NET >> values.yaml\n", nth, &vars);
    let cloud = if level == "0" {
        appended(2)
    } else {
        appended(3)
    };
    let values =
        flows.here_document(flow, "cat << NET > values.yaml\n", 0, &vars) + &appended(1) + &cloud;
    flows.values(flow, &values);
    let logical_clouds = format!("l{level}_logical_cloud/logicalclouds.yaml");
    let files = [
        "controllers.yaml",
        "projects.yaml",
        "clusters.yaml",
        &logical_clouds,
        "instantiatelc.yaml",
        "apps.yaml",
        "intents.yaml",
        "instantiate.yaml",
    ];
    flows.run(&dev, "apply", flow, &files);
    let dig = "collection-deployment-intent-group";
    dev.ok(&["status", dig, "--timeout", "90s"]);
    assert_eq!(
        labelled(&dev, 2, "apis/apps/v1/deployments", "http-server"),
        ["r1-http-server"]
    );
    let services = format!("api/v1/namespaces/{namespace}/services");
    let endpoints = format!("api/v1/namespaces/{namespace}/endpoints");
    wait_until(
        "http-service endpoints on cluster 1",
        Duration::from_secs(60),
        || dev.names(1, &endpoints) == ["http-service"],
    );
    // The server's NodePort Service as its chart made it, on cluster 2 only.
    let real = &dev.objects(2, &services)[0];
    assert_eq!(real["spec"]["type"], "NodePort", "{real}");
    assert!(dev.names(2, &endpoints).is_empty());
    // On cluster 1: where the client's `server.domain`
    // (http://http-service:30083) resolves to, cluster 2's first node.
    let node = &dev.objects(2, "api/v1/nodes")[0]["status"]["addresses"][0]["address"];
    let mirrored = &dev.objects(1, &endpoints)[0]["subsets"][0];
    assert_eq!(&mirrored["addresses"][0]["ip"], node, "{mirrored}");
    assert_eq!(mirrored["ports"][0]["port"], 30083, "{mirrored}");
    let service = &dev.objects(1, &services)[0];
    assert_eq!(service["metadata"]["name"], "http-service");
    assert_eq!(service["spec"]["clusterIP"], "None", "{service}");
    // `delete.sh`: its terminate takes the mirror too.
    flows.run(&dev, "apply", flow, &["terminate.yaml"]);
    dev.ok(&["status", dig, "--timeout", "90s"]);
    for file in ["intents.yaml", "apps.yaml"] {
        flows.run(&dev, "delete", flow, &[file]);
    }
    flows.run(&dev, "apply", flow, &["terminatelc.yaml"]);
    for file in [
        logical_clouds.as_str(),
        "clusters.yaml",
        "projects.yaml",
        "controllers.yaml",
    ] {
        flows.run(&dev, "delete", flow, &[file]);
    }
    assert!(dev.names(1, &endpoints).is_empty());
    dev.assert_clusters_empty();
}

#[test]
fn dtc_service_discovery_in_an_admin_cloud_points_the_client_at_the_servers_node() {
    dtc_service_discovery("0", "default");
}

#[test]
fn dtc_service_discovery_in_a_standard_cloud_stays_in_its_namespace() {
    dtc_service_discovery("1", "ns1");
}

/// Dev cluster `n`'s API address.
fn server_of(dev: &Dev, n: u32) -> String {
    std::fs::read_to_string(dev.kubeconfig_path(n))
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: ").map(str::to_owned))
        .unwrap()
}

/// hpa's `setup.sh create`: its tar commands and the values it writes,
/// for clusters 1 and 2 (3 and 4 left `oops`, as when unset).
fn hpa_setup(dev: &Dev) -> Flows {
    let flows = Flows::new();
    let flow = "hpa";
    for tar in [
        "-czf output/firewall.tar.gz -C ../helm_charts/composite-cnf-firewall/helm firewall",
        "-czf output/packetgen.tar.gz -C ../helm_charts/composite-cnf-firewall/helm packetgen",
        "-czf output/sink.tar.gz -C ../helm_charts/composite-cnf-firewall/helm sink",
        "-czf output/profile.tar.gz -C ../helm_charts/composite-cnf-firewall/profile manifest.yaml override_values.yaml",
        "-czf output/http-client.tgz -C ../helm_charts/http-client/helm http-client",
        "-czf output/http-server.tgz -C ../helm_charts/http-server/helm http-server",
        "-czf output/http-server-profile.tar.gz -C ../helm_charts/http-server/profile/network_policy_overrides/http-server-profile .",
        "-czf output/http-client-profile.tar.gz -C ../helm_charts/http-client/profile/network_policy_overrides/http-client-profile .",
    ] {
        flows.tar(flow, tar);
    }
    let (k1, k2) = (kubeconfig(dev, 1), kubeconfig(dev, 2));
    flows.setup_values(
        flow,
        &[
            ("KUBE_PATH1", &k1),
            ("KUBE_PATH2", &k2),
            ("KUBE_PATH3", "oops"),
            ("KUBE_PATH4", "oops"),
            ("HOST_IP", "127.0.0.1"),
            (
                "HTTP_SERVER_IMAGE_REPOSITORY",
                "registry.local/my-custom-httptest-server",
            ),
            (
                "HTTP_CLIENT_IMAGE_REPOSITORY",
                "registry.local/my-custom-httptest-client",
            ),
        ],
    );
    flows
}

#[test]
fn hpa_places_by_the_clusters_free_cpu_and_sets_the_consumers_resources() {
    let dev = Dev::start();
    let flows = hpa_setup(&dev);
    let flow = "hpa";
    // cluster1's one node is nearly full: a pod bound to it asks for 7.5
    // of its 8 cores, so the consumer's two 1-core replicas fit only on
    // cluster2 (the anyOf's second choice).
    let node = &dev.objects(1, "api/v1/nodes")[0]["metadata"]["name"];
    let hog = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "hog", "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "hog", "image": "busybox",
            "resources": {"requests": {"cpu": "7500m"}}}]}});
    let made = reqwest::blocking::Client::new()
        .post(format!(
            "{}/api/v1/namespaces/default/pods",
            server_of(&dev, 1)
        ))
        .json(&hog)
        .send()
        .unwrap();
    assert!(made.status().is_success(), "{}", made.text().unwrap());
    let files = ["prerequisites.yaml", "hpa-example.yaml"];
    flows.run(&dev, "apply", flow, &files);
    dev.ok(&[
        "status",
        "collection-deployment-intent-group",
        "--timeout",
        "90s",
    ]);
    let deployments = "apis/apps/v1/deployments";
    assert!(labelled(&dev, 1, deployments, "http-client").is_empty());
    assert_eq!(
        labelled(&dev, 1, deployments, "http-server"),
        ["r1-http-server"]
    );
    // hpa-action: the consumer's replicas and its container's resources.
    let client = object(&dev, 2, deployments, "r1-http-client");
    assert_eq!(client["spec"]["replicas"], 2, "{client}");
    let resources = &client["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert_eq!(resources["requests"]["cpu"], "1", "{resources}");
    assert_eq!(resources["limits"]["cpu"], "1", "{resources}");
    let mut reversed = files;
    reversed.reverse();
    flows.run(&dev, "delete", flow, &reversed);
    assert!(labelled(&dev, 2, deployments, "http-client").is_empty());
    dev.assert_clusters_empty();
}

/// single-cluster's `setup.sh` tar commands for the use cases run here
/// (monitor packed from EMCO's deployments/helm, vendored under
/// helm_charts/monitor/helm: SOURCES.md).
const SINGLE_CLUSTER_TARS: [&str; 10] = [
    "-czf output/operator_profile.tar.gz -C ../helm_charts/operators-latest/profile .",
    "-czf output/http-client.tar.gz -C ../helm_charts/http-client/helm http-client",
    "-czf output/http-server.tar.gz -C ../helm_charts/http-server/helm http-server",
    "-czf output/http-server-profile.tar.gz -C ../helm_charts/http-server/profile/network_policy_overrides/http-server-profile .",
    "-czf output/http-client-profile.tar.gz -C ../helm_charts/http-client/profile/network_policy_overrides/http-client-profile .",
    "-czf output/firewall.tar.gz -C ../helm_charts/composite-cnf-firewall/helm firewall",
    "-czf output/packetgen.tar.gz -C ../helm_charts/composite-cnf-firewall/helm packetgen",
    "-czf output/sink.tar.gz -C ../helm_charts/composite-cnf-firewall/helm sink",
    "-czf output/profile.tar.gz -C ../helm_charts/composite-cnf-firewall/profile manifest.yaml override_values.yaml",
    "-czf output/monitor.tar.gz -C ../helm_charts/monitor/helm monitor",
];

/// single-cluster's use case `case` (`monitor`, `test-vfw`, `test-dtc`)
/// in a logical cloud of `level`, as `LOGICAL_CLOUD_LEVEL=<level>
/// ./setup.sh create` prepares it: values from
/// `templates/values-novars.yaml` and its here-document,
/// `prerequisites.yaml` from the common template and the level's. `check`
/// reads dev cluster 1 once the DIG `dig` is Ready.
fn single_cluster(level: &str, case: &str, dig: &str, check: impl Fn(&Dev)) {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "single-cluster";
    for tar in SINGLE_CLUSTER_TARS {
        flows.tar(flow, tar);
    }
    let dir = flows.dir(flow);
    let mut values = std::fs::read_to_string(dir.join("templates/values-novars.yaml")).unwrap();
    values += &flows.here_document(
        flow,
        "cat << NET >> values.yaml\n",
        0,
        &[
            ("RSYNC_CONTROL_PORT", "30431"),
            ("GAC_CONTROL_PORT", "30433"),
            ("OVN_CONTROL_PORT", "30432"),
            ("DTC_CONTROL_PORT", "30448"),
            ("NPS_CONTROL_PORT", "30438"),
            ("KUBE_PATH", &kubeconfig(&dev, 1)),
            ("HOST_IP", "127.0.0.1"),
            ("IMAGE_REPOSITORY", "myrepository.example.com"),
        ],
    );
    flows.values(flow, &values);
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    std::fs::write(
        dir.join("prerequisites.yaml"),
        read("templates/prerequisites-common.yaml")
            + &read(&format!("templates/prerequisites-lc-{level}.yaml")),
    )
    .unwrap();
    let deployment = format!("{case}-deployment.yaml");
    let instantiate = format!("{case}-instantiate.yaml");
    let files = [
        "prerequisites.yaml",
        "instantiate-lc.yaml",
        &deployment,
        &instantiate,
    ];
    flows.run(&dev, "apply", flow, &files);
    dev.ok(&["status", dig, "--timeout", "90s"]);
    check(&dev);
    let mut reversed = files;
    reversed.reverse();
    flows.run(&dev, "delete", flow, &reversed);
    dev.assert_clusters_empty();
}

/// The names of dev cluster 1's Deployments in `namespace`.
fn deployments_in(dev: &Dev, namespace: &str) -> Vec<String> {
    dev.objects(
        1,
        &format!("apis/apps/v1/namespaces/{namespace}/deployments"),
    )
    .iter()
    .map(|d| d["metadata"]["name"].as_str().unwrap().to_owned())
    .collect()
}

fn single_cluster_monitor(level: &str, namespace: &str) {
    single_cluster(
        level,
        "monitor",
        "collection-deployment-intent-group",
        |dev| {
            let names = deployments_in(dev, namespace);
            assert!(names.iter().any(|n| n.ends_with("-monitor")), "{names:?}");
        },
    );
}

#[test]
fn single_cluster_monitor_in_an_admin_cloud() {
    single_cluster_monitor("admin", "default");
}

#[test]
fn single_cluster_monitor_in_a_privileged_cloud() {
    single_cluster_monitor("privileged", "privileged-lc-ns");
}

#[test]
fn single_cluster_monitor_in_a_standard_cloud() {
    single_cluster_monitor("standard", "standard-lc-ns");
}

#[test]
fn single_cluster_vfw_in_an_admin_cloud() {
    single_cluster("admin", "test-vfw", "vfw_deployment_intent_group", |dev| {
        let mut names = deployments_in(dev, "default");
        names.sort();
        assert_eq!(names, ["r1-firewall", "r1-packetgen", "r1-sink"]);
        let sink = object(dev, 1, "apis/apps/v1/deployments", "r1-sink");
        let networks = &sink["spec"]["template"]["metadata"]["annotations"]["k8s.plugin.opnfv.org/nfn-network"];
        assert!(
            networks.to_string().contains("protected-private-net"),
            "{sink}"
        );
    });
}

#[test]
fn single_cluster_dtc_in_a_privileged_cloud() {
    single_cluster(
        "privileged",
        "test-dtc",
        "collection-deployment-intent-group",
        |dev| {
            let mut names = deployments_in(dev, "privileged-lc-ns");
            names.sort();
            assert_eq!(names.len(), 2, "{names:?}");
            let policies = dev.objects(
                1,
                "apis/networking.k8s.io/v1/namespaces/privileged-lc-ns/networkpolicies",
            );
            assert_eq!(policies.len(), 1, "{policies:?}");
        },
    );
}

#[test]
fn vfw_puts_ovnactions_networks_on_the_three_workloads() {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "vfw";
    for tar in [
        "-czf output/firewall.tar.gz -C ../helm_charts/composite-cnf-firewall/helm firewall",
        "-czf output/packetgen.tar.gz -C ../helm_charts/composite-cnf-firewall/helm packetgen",
        "-czf output/sink.tar.gz -C ../helm_charts/composite-cnf-firewall/helm sink",
        "-czf output/profile.tar.gz -C ../helm_charts/composite-cnf-firewall/profile manifest.yaml override_values.yaml",
    ] {
        flows.tar(flow, tar);
    }
    flows.setup_values(
        flow,
        &[
            ("KUBE_PATH", &kubeconfig(&dev, 1)),
            ("HOST_IP", "127.0.0.1"),
        ],
    );
    // `./setup.sh create` (an admin cloud): prerequisites.yaml's head and
    // its admin part.
    let prerequisites = flows.here_document(flow, "cat << NET > prerequisites.yaml\n", 0, &[])
        + &flows.here_document(flow, "cat << NET >> prerequisites.yaml\n", 1, &[]);
    std::fs::write(flows.dir(flow).join("prerequisites.yaml"), prerequisites).unwrap();
    let files = ["prerequisites.yaml", "test-vfw.yaml"];
    flows.run(&dev, "apply", flow, &files);
    dev.ok(&["status", "vfw_deployment_intent_group", "--timeout", "90s"]);
    let deployments = "apis/apps/v1/deployments";
    // ovnaction's annotations on each workload's pod template, the
    // interfaces in the workload's order.
    let networks = |name: &str| {
        let deployment = object(&dev, 1, deployments, name);
        let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
        annotations["k8s.plugin.opnfv.org/nfn-network"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {annotations}"))
            .to_owned()
    };
    let packetgen = networks("r1-packetgen");
    assert!(
        packetgen.contains("unprotected-private-net") && packetgen.contains("192.168.10.2"),
        "{packetgen}"
    );
    let firewall = networks("r1-firewall");
    for network in [
        "emco-private-net",
        "unprotected-private-net",
        "protected-private-net",
    ] {
        assert!(firewall.contains(network), "{firewall}");
    }
    assert!(networks("r1-sink").contains("protected-private-net"));
    // The DIG's override values reached the charts.
    let sink = object(&dev, 1, "api/v1/services", "r1-sink");
    assert_eq!(sink["spec"]["ports"][0]["nodePort"], 30677, "{sink}");
    let mut reversed = files;
    reversed.reverse();
    flows.run(&dev, "delete", flow, &reversed);
    dev.assert_clusters_empty();
}

#[test]
fn hpa_vfw_places_the_hugepages_consumers_on_the_node_labelled_for_them() {
    let dev = Dev::start();
    let flows = hpa_setup(&dev);
    let flow = "hpa";
    // Node Feature Discovery's label, on cluster2's node only.
    let node = dev.objects(2, "api/v1/nodes")[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let labelled_node = reqwest::blocking::Client::new()
        .patch(format!("{}/api/v1/nodes/{node}", server_of(&dev, 2)))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"metadata":{"labels":{"feature.node.kubernetes.io/hugepages":"true"}}}"#)
        .send()
        .unwrap();
    assert!(
        labelled_node.status().is_success(),
        "{}",
        labelled_node.text().unwrap()
    );
    let files = [
        "prerequisites.yaml",
        "hpa-vfw-networks.yaml",
        "hpa-vfw-apps.yaml",
    ];
    flows.run(&dev, "apply", flow, &files);
    dev.ok(&[
        "status",
        "collection-deployment-intents",
        "--timeout",
        "90s",
    ]);
    let deployments = "apis/apps/v1/deployments";
    // packetgen and firewall (anyOf cluster1 or cluster2) need the label:
    // cluster2; sink (allOf) on both.
    for app in ["packetgen", "firewall"] {
        assert!(labelled(&dev, 1, deployments, app).is_empty(), "{app}");
        assert_eq!(labelled(&dev, 2, deployments, app), [format!("r1-{app}")]);
    }
    for n in [1, 2] {
        assert_eq!(labelled(&dev, n, deployments, "sink"), ["r1-sink"]);
    }
    // hpa-action pins the consumer to a node with the label.
    let packetgen = object(&dev, 2, deployments, "r1-packetgen");
    assert_eq!(
        packetgen["spec"]["template"]["spec"]["nodeSelector"]["feature.node.kubernetes.io/hugepages"],
        "true",
        "{packetgen}"
    );
    let mut reversed = files;
    reversed.reverse();
    flows.run(&dev, "delete", flow, &reversed);
    dev.assert_clusters_empty();
}

/// test-cert's issuing cluster as `ca-certs/setup-ca-issuers.sh` leaves
/// it: for each issuer a root CA, an intermediate signed by it, and a
/// ClusterIssuer over the intermediate's secret in `cert-manager`. The
/// script's own openssl commands; the intermediate's CertificateRequest,
/// which cert-manager signs there, is signed with openssl here (no
/// cert-manager runs on a bare API server).
fn set_up_ca_issuers(flows: &Flows, issuing: &ApiServer) {
    let openssl = |dir: &PathBuf, args: &str| {
        let status = Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl {args}");
    };
    for issuer in ["foo", "foobar", "new-istio-system"] {
        let dir = flows.dir(&format!("test-cert/ca-certs/{issuer}"));
        for sub in ["root", "csr", "istio"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        openssl(&dir, &format!("genrsa -out root/{issuer}-ca-key.pem 4096"));
        openssl(
            &dir,
            &format!(
                "req -new -key root/{issuer}-ca-key.pem -config root-ca.conf -out root/{issuer}-ca.csr"
            ),
        );
        openssl(
            &dir,
            &format!(
                "x509 -req -days 3650 -signkey root/{issuer}-ca-key.pem -extensions req_ext -extfile root-ca.conf -in root/{issuer}-ca.csr -out root/{issuer}-ca-cert.pem"
            ),
        );
        openssl(&dir, &format!("genrsa -out csr/{issuer}-csr-key.pem 4096"));
        openssl(
            &dir,
            &format!(
                "req -new -key csr/{issuer}-csr-key.pem -config root-ca.conf -out csr/{issuer}"
            ),
        );
        openssl(
            &dir,
            &format!(
                "x509 -req -days 90 -in csr/{issuer} -CA root/{issuer}-ca-cert.pem -CAkey root/{issuer}-ca-key.pem -CAcreateserial -extensions req_ext -extfile root-ca.conf -out istio/ca.crt"
            ),
        );
        let chain = std::fs::read_to_string(dir.join("istio/ca.crt")).unwrap()
            + &std::fs::read_to_string(dir.join(format!("root/{issuer}-ca-cert.pem"))).unwrap();
        std::fs::write(dir.join("istio/tls.crt"), chain).unwrap();
        std::fs::copy(
            dir.join(format!("csr/{issuer}-csr-key.pem")),
            dir.join("istio/tls.key"),
        )
        .unwrap();
        let created = kubectl(
            &issuing.kubeconfig_path,
            &[
                "create",
                "secret",
                "generic",
                &format!("{issuer}-ca"),
                "-n",
                "cert-manager",
                &format!("--from-file={}", dir.join("istio/tls.crt").display()),
                &format!("--from-file={}", dir.join("istio/tls.key").display()),
            ],
        );
        assert!(created.status.success(), "{created:?}");
        let manifest = dir.join("issuer.yaml");
        std::fs::write(
            &manifest,
            format!(
                "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: {issuer}\n\
                 spec:\n  ca:\n    secretName: {issuer}-ca\n"
            ),
        )
        .unwrap();
        let applied = kubectl(
            &issuing.kubeconfig_path,
            &["apply", "-f", manifest.to_str().unwrap()],
        );
        assert!(applied.status.success(), "{applied:?}");
    }
}

/// `kubectl apply` of `file` on the cluster of `kubeconfig`, server-side
/// and without the client's schema check (a virtual cluster serves no
/// OpenAPI document), as a flow's set-up scripts install what its clusters
/// run; it must succeed.
pub(crate) fn kubectl_apply(kubeconfig: &Path, file: &Path) {
    let applied = kubectl(
        kubeconfig,
        &[
            "apply",
            "--server-side",
            "--validate=false",
            "-f",
            file.to_str().unwrap(),
        ],
    );
    assert!(applied.status.success(), "{applied:?}");
}

/// The certificates in a PEM bundle, as DER.
fn pem_chain(pem: &str) -> Vec<Vec<u8>> {
    x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes())
        .map(|p| p.unwrap().contents)
        .collect()
}

/// What ca-certs put on dev cluster `n` for caCert `cert`: its Secret's
/// `tls.crt` must chain to `issuer`'s intermediate and carry `common_name`;
/// its ClusterIssuer must name the Secret; its ConfigCtrl must give Istio
/// that PEM; the ProxyConfigs are returned by namespace.
fn check_distributed(
    flows: &Flows,
    dev: &Dev,
    n: u32,
    cert: &str,
    issuer: &str,
    common_name: &str,
) -> Vec<String> {
    use base64::Engine;
    use x509_parser::prelude::*;
    let on = On::Dev(dev, n);
    let suffix = format!("-{cert}-provider1-cluster{n}");
    let named = |collection: &str, ending: &str| -> Value {
        let wanted = format!("{suffix}{ending}");
        on.eventually(&format!("dev-{n}: {collection} *{wanted}"), |on| {
            on.objects(collection)
                .iter()
                .any(|o| o["metadata"]["name"].as_str().unwrap().ends_with(&wanted))
        });
        on.objects(collection)
            .into_iter()
            .find(|o| o["metadata"]["name"].as_str().unwrap().ends_with(&wanted))
            .unwrap()
    };
    let secret = named("api/v1/namespaces/cert-manager/secrets", "-ca");
    let crt = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["tls.crt"].as_str().unwrap())
        .unwrap();
    let crt = String::from_utf8(crt).unwrap();
    let chain = pem_chain(&crt);
    let intermediate =
        std::fs::read_to_string(flows.dir(&format!("test-cert/ca-certs/{issuer}/istio/ca.crt")))
            .unwrap();
    assert_eq!(chain.len(), 3, "leaf, {issuer}'s intermediate, its root");
    assert_eq!(chain[1], pem_chain(&intermediate)[0]);
    let (_, leaf) = X509Certificate::from_der(&chain[0]).unwrap();
    let (_, signer) = X509Certificate::from_der(&chain[1]).unwrap();
    leaf.verify_signature(Some(signer.public_key()))
        .expect("signed by the issuer's CA");
    assert!(leaf.is_ca());
    assert_eq!(
        leaf.subject()
            .iter_common_name()
            .next()
            .unwrap()
            .as_str()
            .unwrap(),
        common_name
    );
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["tls.key"].as_str().unwrap())
        .unwrap();
    assert!(
        String::from_utf8(key)
            .unwrap()
            .starts_with("-----BEGIN RSA PRIVATE KEY-----")
    );
    let issuer_object = named("apis/cert-manager.io/v1/clusterissuers", "-issuer");
    assert_eq!(
        issuer_object["spec"]["ca"]["secretName"],
        secret["metadata"]["name"]
    );
    let issuer_name = issuer_object["metadata"]["name"].as_str().unwrap();
    let kncc = named(
        "apis/kncc.k8sappconfig.com.gitlab.com/v1alpha1/namespaces/istio-system/configctrls",
        "-kncc",
    );
    let signers = kncc["spec"]["patch"][0]["value"].as_str().unwrap();
    assert!(
        signers.contains(&format!("clusterissuers.cert-manager.io/{issuer_name}")),
        "{signers}"
    );
    let first_line = crt.lines().nth(1).unwrap();
    assert!(signers.contains(&format!("    {first_line}")), "{signers}");
    on.objects("apis/networking.istio.io/v1beta1/proxyconfigs")
        .iter()
        .filter(|p| {
            p["metadata"]["name"]
                .as_str()
                .unwrap()
                .contains(&format!("{suffix}-"))
        })
        .map(|p| {
            assert_eq!(
                p["spec"]["environmentVariables"]["ISTIO_META_CERT_SIGNER"],
                issuer_name
            );
            p["metadata"]["namespace"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// test-cert, as its README runs it: three edge clusters (wasmco dev's)
/// and an issuing cluster (a real API server) whose ClusterIssuers
/// `setup-ca-issuers.sh` made. The cluster provider's caCert gives all
/// three edges a CA from `new-istio-system`, as Istio's default signer;
/// the project's give each logical cloud's clusters one from `foo` or
/// `foobar`, chosen per namespace by ProxyConfigs, and only on the
/// clouds' own clusters. Then every file is deleted in reverse.
#[test]
fn test_cert_signs_each_clusters_ca_with_the_issuing_clusters_issuer() {
    let issuing = ApiServer::start("emco-test-cert-issuing");
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "test-cert";
    kubectl_apply(&issuing.kubeconfig_path, &flows.dir(flow).join("crds.yaml"));
    for n in 1..=3 {
        kubectl_apply(&dev.kubeconfig_path(n), &flows.dir(flow).join("crds.yaml"));
    }
    set_up_ca_issuers(&flows, &issuing);
    flows.setup_values(
        flow,
        &[
            ("HOST_IP", "127.0.0.1"),
            (
                "KUBE_PATH_ISSUING",
                issuing.kubeconfig_path.to_str().unwrap(),
            ),
            ("KUBE_PATH1", &kubeconfig(&dev, 1)),
            ("KUBE_PATH2", &kubeconfig(&dev, 2)),
            ("KUBE_PATH3", &kubeconfig(&dev, 3)),
        ],
    );
    let provider_files = [
        "prerequisites.yaml",
        "ca-cert-cluster-provider.yaml",
        "ca-cert-cluster-provider-enrollment.yaml",
        "ca-cert-cluster-provider-distribution.yaml",
    ];
    flows.run(&dev, "apply", flow, &provider_files);
    // group0a names cluster1, group0b's label group23 selects 2 and 3.
    for n in 1..=3 {
        let namespaces = check_distributed(
            &flows,
            &dev,
            n,
            "cert0",
            "new-istio-system",
            &format!("cert0-provider1-cluster{n}-ca-foo"),
        );
        assert!(
            namespaces.is_empty(),
            "a provider's caCert makes no ProxyConfig"
        );
    }
    let kncc = dev.objects(
        1,
        "apis/kncc.k8sappconfig.com.gitlab.com/v1alpha1/namespaces/istio-system/configctrls",
    );
    assert_eq!(
        kncc[0]["spec"]["patch"][1]["key"],
        "mesh:\n  defaultConfig:\n    proxyMetadata:\n      ISTIO_META_CERT_SIGNER\n",
        "the provider's caCert is the mesh's default signer"
    );

    let cloud_files = [
        "logical-clouds.yaml",
        "logical-clouds-instantiate.yaml",
        "ca-cert-logical-cloud.yaml",
        "ca-cert-logical-cloud-enrollment.yaml",
        "ca-cert-logical-cloud-distribution.yaml",
    ];
    flows.run(&dev, "apply", flow, &cloud_files);
    // foo: cluster1, cluster2; bar: cluster2, cluster3 (cert1);
    // foobar: cluster1, cluster3 (cert2). group1b's group23 also selects
    // cluster3 for foo, and group2a's cluster2 for foobar: outside those
    // clouds, so not theirs.
    let expected = [
        (1, "cert1", "foo", vec!["foo-ns"]),
        (2, "cert1", "foo", vec!["bar-ns", "foo-ns"]),
        (3, "cert1", "foo", vec!["bar-ns"]),
        (1, "cert2", "foobar", vec!["foobar-ns"]),
        (3, "cert2", "foobar", vec!["foobar-ns"]),
    ];
    for (n, cert, issuer, namespaces) in expected {
        let mut found = check_distributed(
            &flows,
            &dev,
            n,
            cert,
            issuer,
            &format!("{cert}-provider1-cluster{n}-ca-foo"),
        );
        found.sort();
        assert_eq!(found, namespaces, "dev-{n} {cert}");
    }
    assert!(
        dev.objects(2, "apis/cert-manager.io/v1/clusterissuers")
            .iter()
            .all(|i| !i["metadata"]["name"].as_str().unwrap().contains("-cert2-")),
        "cluster2 is not in foobar"
    );

    let mut everything: Vec<&str> = provider_files.into_iter().chain(cloud_files).collect();
    everything.reverse();
    flows.run(&dev, "delete", flow, &everything);
    for n in 1..=3 {
        let on = On::Dev(&dev, n);
        on.eventually(&format!("dev-{n}: ca-certs' objects gone"), |on| {
            on.objects("apis/cert-manager.io/v1/clusterissuers")
                .is_empty()
                && on
                    .objects("apis/networking.istio.io/v1beta1/proxyconfigs")
                    .is_empty()
                && on
                    .objects("apis/kncc.k8sappconfig.com.gitlab.com/v1alpha1/configctrls")
                    .is_empty()
                && on
                    .objects("api/v1/namespaces/cert-manager/secrets")
                    .is_empty()
        });
    }
    dev.assert_no_projects();
}

/// sfc, as its README runs it on one cluster: the chain (slb, ngfw and
/// sdewan, with ovnaction's interfaces) in an admin cloud, then a client on
/// each end in its own standard cloud, then the second pair of clients in
/// clouds labelled for the chain's other selectors; deleted in reverse.
/// sfc puts Nodus' NetworkChaining beside the chain; sfcclient gives each
/// client's pods the labels of the selector its cloud matches.
#[test]
fn sfc_chains_three_functions_and_labels_each_clouds_clients() {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "sfc";
    kubectl_apply(&dev.kubeconfig_path(1), &flows.dir(flow).join("crds.yaml"));
    for tar in [
        "-czf output/ngfw.tar.gz -C chainCA/helm ngfw",
        "-czf output/sdewan.tar.gz -C chainCA/helm sdewan",
        "-czf output/slb.tar.gz -C chainCA/helm slb",
        "-czf output/profile.tar.gz -C chainCA manifest.yaml override_values.yaml",
        "-czf output/left-nginx.tar.gz -C clientCA/helm left-nginx",
        "-czf output/right-nginx.tar.gz -C clientCA/helm right-nginx",
        "-czf output/clientprofile.tar.gz -C clientCA manifest.yaml override_values.yaml",
    ] {
        flows.tar(flow, tar);
    }
    flows.setup_values(
        flow,
        &[
            ("KUBE_PATH", &kubeconfig(&dev, 1)),
            ("HOST_IP", "127.0.0.1"),
        ],
    );
    let files = [
        "prerequisites.yaml",
        "sfc-networks.yaml",
        "sfc-logical-clouds.yaml",
        "sfc-ca.yaml",
        "sfc-left-client.yaml",
        "sfc-right-client.yaml",
        "sfc-left-client-2.yaml",
        "sfc-right-client-2.yaml",
    ];
    flows.run(&dev, "apply", flow, &files);
    dev.ok(&["status", "sfc-deployment-intent-group", "--timeout", "90s"]);
    let on = On::Dev(&dev, 1);
    let chainings = "apis/k8s.plugin.opnfv.org/v1alpha1/networkchainings";
    on.eventually("the NetworkChaining", |on| {
        !on.objects(chainings).is_empty()
    });
    let chaining = on.object(chainings, "sfc-intent");
    let routing = &chaining["spec"]["routingSpec"];
    assert_eq!(chaining["spec"]["chainType"], "Routing");
    assert_eq!(
        routing["networkChain"],
        "net=virtual-net1,app=slb,net=dynamic-net1,app=ngfw,net=dynamic-net2,app=sdewan,net=virtual-net2"
    );
    // Selectors in name order (EMCO: the order they were made, which puts
    // leftclient2 first): the left provider network fills the first.
    let left = &routing["left"];
    assert_eq!(left[0]["podSelector"]["matchLabels"]["sfc"], "head");
    assert_eq!(left[0]["networkName"], "left-pnetwork");
    assert_eq!(left[0]["gatewayIp"], "172.30.10.2");
    assert_eq!(left[1]["podSelector"]["matchLabels"]["sfc"], "head2");
    assert_eq!(left[1]["networkName"], "");
    assert_eq!(routing["right"][0]["networkName"], "right-pnetwork");
    // ovnaction's interfaces on the functions.
    let slb = on.object("apis/apps/v1/deployments", "slb");
    let interfaces =
        slb["spec"]["template"]["metadata"]["annotations"]["k8s.plugin.opnfv.org/nfn-network"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    assert!(interfaces.contains("left-pnetwork"), "{interfaces}");
    // Each client's pods carry the labels of the selector its cloud matches.
    for (namespace, name, label) in [
        ("sfc-head", "left-nginx", "head"),
        ("sfc-tail", "right-nginx", "tail"),
        ("sfc-head-two", "left-nginx", "head2"),
        ("sfc-tail-two", "right-nginx", "tail2"),
    ] {
        let collection = format!("apis/apps/v1/namespaces/{namespace}/deployments");
        on.eventually(&format!("{namespace}/{name}"), |on| {
            on.objects(&collection)
                .iter()
                .any(|d| d["metadata"]["name"] == name)
        });
        let client = on.object(&collection, name);
        assert_eq!(
            client["spec"]["template"]["metadata"]["labels"]["sfc"], label,
            "{namespace}/{name}"
        );
    }
    let mut reversed = files;
    reversed.reverse();
    flows.run(&dev, "delete", flow, &reversed);
    on.eventually("the NetworkChaining gone", |on| {
        on.objects(chainings).is_empty()
    });
    dev.assert_no_projects();
    dev.assert_clusters_empty();
}
