//! EMCO's own example flows (vendored unchanged in `tests/emco/`), run as
//! an EMCO user runs them: their charts packed by their `setup.sh`'s tar
//! commands, their files applied with `wasmco apply -f FILE -v values.yaml`
//! in their README's order against `wasmco dev`'s virtual clusters, then
//! deleted in their order, leaving the clusters empty.

use std::path::PathBuf;
use std::process::Command;

use crate::cli::{Dev, repo};

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

/// The names of `collection`'s objects in dev cluster `n` that carry
/// `app: <app>`.
fn labelled(dev: &Dev, n: u32, collection: &str, app: &str) -> Vec<String> {
    dev.objects(n, collection)
        .iter()
        .filter(|o| o["metadata"]["labels"]["app"] == app)
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// multi-cluster's `setup.sh -a collectd:cluster1:cluster2 -b operator:cluster1`:
/// its values, and the tar commands of `_common.sh` for those two apps.
fn multi_cluster_setup(flows: &Flows, dev: &Dev, flow: &str, extra: &str) {
    for tar in [
        "-czf output/collectd.tar.gz -C ../helm_charts/collectd/helm .",
        "-czf output/collectd_profile.tar.gz -C ../helm_charts/collectd/profile .",
        "-czf output/operator.tar.gz -C ../helm_charts/operators-latest/helm .",
        "-czf output/operator_profile.tar.gz -C ../helm_charts/operators-latest/profile .",
    ] {
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
            kubeconfig(dev, 1),
            kubeconfig(dev, 2)
        ),
    );
}

#[test]
fn multi_cluster_deploys_collectd_on_both_clusters_and_the_operator_on_one() {
    let dev = Dev::start();
    let flows = Flows::new();
    multi_cluster_setup(
        &flows,
        &dev,
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
    let applied = flows.run(&dev, "apply", "multi-cluster", &files);
    // EMCO's controllers by host and port bind the built-in components.
    for controller in ["gac", "ovnaction", "dtc"] {
        assert!(
            applied.contains(&format!("controllers/{controller}")),
            "{applied}"
        );
    }
    let status = dev.ok(&["status", "test-deployment-intent", "--timeout", "90s"]);
    assert!(status.contains("collectd"), "{status}");
    // collectd on both clusters (released as the DIG's version, with the
    // profile's values rendered in), the operator's etcd on cluster1 only.
    for n in [1, 2] {
        assert_eq!(
            labelled(&dev, n, "apis/apps/v1/daemonsets", "collectd"),
            ["r1-collectd"],
            "dev-{n}"
        );
        let config = dev
            .objects(n, "api/v1/configmaps")
            .into_iter()
            .find(|c| c["metadata"]["labels"]["app"] == "collectd")
            .unwrap();
        assert!(
            config["data"]["collectd.conf"]
                .as_str()
                .unwrap()
                .contains("Interval 5"),
            "{config}"
        );
    }
    assert_eq!(
        labelled(&dev, 1, "apis/apps/v1/statefulsets", "etcd"),
        ["etcd"]
    );
    assert!(labelled(&dev, 2, "apis/apps/v1/statefulsets", "etcd").is_empty());
    let mut reversed = files;
    reversed.reverse();
    flows.run(&dev, "delete", "multi-cluster", &reversed);
    for n in [1, 2] {
        assert!(labelled(&dev, n, "apis/apps/v1/daemonsets", "collectd").is_empty());
        assert!(labelled(&dev, n, "apis/apps/v1/statefulsets", "etcd").is_empty());
    }
    dev.assert_clusters_empty();
}

#[test]
fn test_update_moves_collectd_and_rollback_brings_it_back() {
    let dev = Dev::start();
    let flows = Flows::new();
    multi_cluster_setup(
        &flows,
        &dev,
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

#[test]
fn dcm_advanced_adds_a_cluster_to_a_standard_cloud_and_deploys_in_its_namespace() {
    let dev = Dev::start();
    let flows = Flows::new();
    let flow = "dcm-advanced";
    for tar in [
        "-czf output/collectd.tar.gz -C ../helm_charts/collectd/helm .",
        "-czf output/collectd_profile.tar.gz -C ../helm_charts/collectd/profile .",
    ] {
        flows.tar(flow, tar);
    }
    flows.values(
        flow,
        &format!(
            "PackagesPath: output\nProjectName: proj1\nClusterProvider: provider1\n\
             Cluster1: cluster1\nCluster2: cluster2\nCluster1Ref: cluster1-ref\nCluster2Ref: cluster2-ref\n\
             LogicalCloud: lc1\nAdminCloud: admin-lc\nPrivilegedCloud: privileged-lc\n\
             StandardCloud: standard-lc\nPrivilegedNamespace: privileged-lc-ns\n\
             StandardNamespace: standard-lc-ns\nClusterQuota: quota1\n\
             StandardPermission: standard-permission\nPrivilegedPermission1: privileged-permission-1\n\
             PrivilegedPermission2: privileged-permission-2\nPrivilegedPermission3: privileged-permission-3\n\
             CompositeApp: test-collectd\nHelmApp1: output/collectd.tar.gz\n\
             ProfileApp1: output/collectd_profile.tar.gz\nCompositeProfile: collectd-composite-profile\n\
             GenericPlacementIntent: collectd-placement-intent\n\
             DeploymentIntent: collectd-deployment-intent-group\nIntent: intent\n\
             ConfigmapFile: info.json\nRsyncPort: 30431\nHostIP: 127.0.0.1\n\
             KubeConfig: {k1}\nKubeConfig2: {k2}\n\
             Clusters:\n- Name: cluster1\n  KubeConfig: {k1}\n- Name: cluster2\n  KubeConfig: {k2}\n\
             Applist:\n- Name: collectd\n  Cluster: [cluster1, cluster2]\n",
            k1 = kubeconfig(&dev, 1),
            k2 = kubeconfig(&dev, 2)
        ),
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
