//! The same rsync scenarios against the virtual cluster and a real
//! kube-apiserver (with etcd), so that the virtual cluster is held to the
//! real server's behaviour. Every scenario ends by checking the status
//! against what the cluster holds: nothing is Applied that is not there,
//! nothing Deleted that is.
//!
//! "Ready" for kinds no controller acts on (ConfigMaps, Secrets, Services,
//! ServiceAccounts, Roles, custom objects) means the object exists as
//! applied; the real server here runs no controller-manager, so workloads
//! are not among these scenarios.

use std::time::Duration;

use serde_json::json;

use crate::deploy::action;
use crate::support::server::{Server, Virtual, doc, expect};

use crate::support::clusters::{
    CA, Cluster, Deployment, SCENARIO_PATIENCE, all, config_map, config_maps, on_both,
};
use crate::support::wait::wait_until;
use wasmco_rsync::owner_label;

fn apply_update_and_terminate(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let name = |n: &str| format!("life-{tag}-{n}");
    let manifests = [
        config_map(&name("a"), json!({"k": "1"})),
        config_map(&name("b"), json!({"k": "1"})),
        config_map(&name("c"), json!({"k": "1"})),
    ]
    .concat();
    let dig = deployment.instantiate(&format!("life{tag}"), &[("cfg", manifests)]);
    deployment.wait_until(&dig, "all applied and ready", |rows| {
        rows.len() == 3 && all(rows, "Applied", "Ready")
    });
    let a = cluster.get("configmap", &name("a")).expect("a is there");
    assert_eq!(a["data"]["k"], "1");
    assert_eq!(
        a["metadata"]["labels"]["wasmco.io/deployment-intent-group"],
        owner_label(&format!("life{tag}/ca/v1/d"))
    );
    deployment.check_against(&dig, &cluster);

    // The update changes a and drops c.
    let updated = [
        config_map(&name("a"), json!({"k": "2"})),
        config_map(&name("b"), json!({"k": "1"})),
    ]
    .concat();
    let app = format!("/v2/projects/life{tag}/{CA}/apps/cfg");
    expect(
        deployment
            .server
            .replace_upload(&app, doc("cfg", json!({})), updated.into_bytes()),
        200,
    );
    expect(action(&deployment.server, &dig, "update"), 202);
    wait_until("c removed and a changed", SCENARIO_PATIENCE, || {
        cluster.get("configmap", &name("c")).is_none()
            && cluster.get("configmap", &name("a")).unwrap()["data"]["k"] == "2"
    });
    deployment.wait_until(&dig, "the update applied", |rows| {
        rows.len() == 2 && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);

    expect(action(&deployment.server, &dig, "terminate"), 202);
    deployment.wait_until(&dig, "everything deleted", |rows| {
        rows.iter().all(|r| r.deployed == "Deleted")
    });
    for n in ["a", "b", "c"] {
        assert!(cluster.get("configmap", &name(n)).is_none(), "{n} is left");
    }
    deployment.check_against(&dig, &cluster);
}

fn drift_is_repaired(cluster: Cluster) {
    // No resync in the test's time: the watch finds the drift.
    let mut deployment = Deployment::with_resync(&cluster, "10m");
    let tag = cluster.tag();
    let (deleted, edited) = (
        format!("drift-{tag}-deleted"),
        format!("drift-{tag}-edited"),
    );
    let manifests = [
        config_map(&deleted, json!({"k": "1"})),
        config_map(&edited, json!({"k": "1"})),
    ]
    .concat();
    let dig = deployment.instantiate(&format!("drift{tag}"), &[("cfg", manifests)]);
    deployment.wait_until(&dig, "applied", |rows| all(rows, "Applied", "Ready"));
    // Settled first: the watches started and the reconcile our own writes
    // ask for (the virtual cluster records no field managers) done. Neither
    // shows outside the server (a watch's start least of all), and with no
    // resync to count, a pause is all there is.
    std::thread::sleep(Duration::from_secs(2));

    cluster.kubectl(&["delete", "configmap", &deleted, "--namespace=default"]);
    cluster.kubectl(&[
        "patch",
        "configmap",
        &edited,
        "--namespace=default",
        "--type=merge",
        "--patch",
        r#"{"data":{"k":"tampered"}}"#,
    ]);
    wait_until("both put back", SCENARIO_PATIENCE, || {
        cluster.get("configmap", &deleted).is_some()
            && cluster.get("configmap", &edited).unwrap()["data"]["k"] == "1"
    });
    deployment.wait_until(&dig, "the drift recorded as repaired", |rows| {
        let drift = |name: &str| {
            rows.iter()
                .find(|r| r.name == name)
                .map(|r| r.detail["drift"].clone())
                .unwrap_or_default()
        };
        drift(&deleted)["kind"] == "Deleted"
            && drift(&edited)["kind"] == "Changed"
            && drift(&deleted)["repaired"].is_string()
            && drift(&edited)["repaired"].is_string()
            && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);
}

/// The message of the DIG's only resource.
fn only_message(deployment: &Deployment, dig: &str) -> String {
    deployment.rows(dig)[0].detail["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A ConfigMap manifest with the force-apply annotation.
fn forced_config_map(name: &str, data: serde_json::Value) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default, \
         annotations: {{wasmco.io/force-apply: \"true\"}}}}\ndata: {data}\n---\n"
    )
}

fn a_conflict_is_reported_not_forced(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let shared = format!("owned-{tag}");
    let first = deployment.instantiate(
        &format!("first{tag}"),
        &[("cfg", config_map(&shared, json!({"k": "1"})))],
    );
    deployment.wait_until(&first, "the first DIG applied", |rows| {
        all(rows, "Applied", "Ready")
    });

    // Another project's DIG wants the same object: refused, without
    // learning whose it is; asking to force changes nothing.
    let second = deployment.instantiate(
        &format!("second{tag}"),
        &[("cfg", config_map(&shared, json!({"k": "2"})))],
    );
    let forcing = deployment.instantiate(
        &format!("forcing{tag}"),
        &[("cfg", forced_config_map(&shared, json!({"k": "3"})))],
    );
    for dig in [&second, &forcing] {
        deployment.wait_until(dig, "the other project's DIG refused", |rows| {
            rows.len() == 1 && rows[0].deployed == "Failed"
        });
        let message = only_message(&deployment, dig);
        assert!(
            message.contains("owned by another deployment") && !message.contains("first"),
            "the owner is not named to another project: {message}"
        );
    }
    // A DIG of the owner's own project learns which one has it.
    let sibling = deployment.instantiate_in(
        &format!("first{tag}"),
        "other",
        &[("cfg", config_map(&shared, json!({"k": "4"})))],
    );
    deployment.wait_until(&sibling, "the sibling DIG refused", |rows| {
        rows.len() == 1 && rows[0].deployed == "Failed"
    });
    let message = only_message(&deployment, &sibling);
    assert!(
        message.contains(&format!("first{tag}/ca/v1/d")),
        "the owner is named within its project: {message}"
    );
    let held = cluster.get("configmap", &shared).unwrap();
    assert_eq!(held["data"]["k"], "1", "nothing was taken over");
    assert_eq!(
        held["metadata"]["labels"]["wasmco.io/deployment-intent-group"],
        owner_label(&format!("first{tag}/ca/v1/d"))
    );

    // An object someone else made: not taken unless the resource asks.
    let foreign = format!("foreign-{tag}");
    // From a file, as JSON: kubectl sends generated objects as protobuf,
    // which the virtual cluster does not read.
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": foreign, "namespace": "default", "labels": {"team": "ops"}},
        "data": {"k": "theirs"}});
    // (The virtual cluster serves no OpenAPI document to validate against.)
    cluster.kubectl_with_input(
        &["create", "--validate=false", "--filename=-"],
        &theirs.to_string(),
    );
    let third = deployment.instantiate(
        &format!("third{tag}"),
        &[("cfg", config_map(&foreign, json!({"k": "ours"})))],
    );
    deployment.wait_until(&third, "the foreign object refused", |rows| {
        rows.len() == 1 && rows[0].deployed == "Failed"
    });
    let message = only_message(&deployment, &third);
    assert!(
        message.contains("not made by wasmco") && message.contains("wasmco.io/force-apply"),
        "{message}"
    );
    assert_eq!(
        cluster.get("configmap", &foreign).unwrap()["data"]["k"],
        "theirs"
    );
    // Asked to, a DIG adopts it; its terminate gives it back, not deletes it.
    let adopting = deployment.instantiate(
        &format!("adopting{tag}"),
        &[("cfg", forced_config_map(&foreign, json!({"k": "adopted"})))],
    );
    deployment.wait_until(&adopting, "the foreign object adopted", |rows| {
        all(rows, "Applied", "Ready")
    });
    let adopted = cluster.get("configmap", &foreign).unwrap();
    assert_eq!(adopted["data"]["k"], "adopted");
    assert_eq!(
        adopted["metadata"]["annotations"]["wasmco.io/adopted"],
        "true"
    );
    expect(action(&deployment.server, &adopting, "terminate"), 202);
    deployment.wait_until(&adopting, "the adopted object given back", |rows| {
        rows.len() == 1 && rows[0].deployed == "Released"
    });
    let released = cluster
        .get("configmap", &foreign)
        .expect("an object that was there before wasmco stays");
    let metadata = &released["metadata"];
    assert_eq!(metadata["labels"]["team"], "ops", "{metadata}");
    for mark in ["wasmco.io/deployment-intent-group", "wasmco.io/app"] {
        assert!(
            metadata["labels"][mark].is_null(),
            "{mark} stays: {metadata}"
        );
    }
    for mark in ["wasmco.io/owner", "wasmco.io/adopted"] {
        assert!(
            metadata["annotations"][mark].is_null(),
            "{mark} stays: {metadata}"
        );
    }

    // Terminating the refused DIG leaves the first DIG's object alone, and
    // its status does not call that object Deleted.
    expect(action(&deployment.server, &second, "terminate"), 202);
    deployment.wait_until(&second, "the second DIG terminated", |rows| {
        rows.len() == 1
            && rows[0].detail["message"]
                .as_str()
                .is_some_and(|m| m.contains("stays on the cluster"))
    });
    assert_eq!(deployment.rows(&second)[0].deployed, "Failed");
    assert!(cluster.get("configmap", &shared).is_some());
    deployment.check_against(&first, &cluster);
    deployment.check_against(&second, &cluster);
}

/// Two projects whose keys would read alike with `/` as `.` (`shop` /
/// `staging.web` and `shop.staging` / `web`) deploy side by side, and
/// each one's reconciles and terminate leave the other's objects alone.
fn keys_that_read_alike_stay_apart(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let (one, two) = (format!("alike-{tag}-one"), format!("alike-{tag}-two"));
    let first = deployment.instantiate_in(
        &format!("shop{tag}"),
        "staging.web",
        &[("cfg", config_map(&one, json!({"k": "1"})))],
    );
    let second = deployment.instantiate_in(
        &format!("shop{tag}.staging"),
        "web",
        &[("cfg", config_map(&two, json!({"k": "2"})))],
    );
    for dig in [&first, &second] {
        deployment.wait_until(dig, "applied", |rows| all(rows, "Applied", "Ready"));
    }
    // Several resyncs of each: two each, on average.
    deployment.wait_for_resyncs(4);
    assert!(
        cluster.get("configmap", &one).is_some(),
        "the first's object was taken"
    );
    assert!(
        cluster.get("configmap", &two).is_some(),
        "the second's object was taken"
    );
    expect(action(&deployment.server, &second, "terminate"), 202);
    deployment.wait_until(&second, "the second terminated", |rows| {
        all(rows, "Deleted", "NotReady")
    });
    assert!(cluster.get("configmap", &two).is_none());
    assert!(
        cluster.get("configmap", &one).is_some(),
        "the other project's terminate deleted the first's object"
    );
    deployment.wait_until(&first, "the first untouched", |rows| {
        all(rows, "Applied", "Ready")
    });
    deployment.check_against(&first, &cluster);
    deployment.check_against(&second, &cluster);
}

/// A namespace made outside wasmco and listed in an app is not taken;
/// adopted when the app asks, it is given back at terminate, never deleted
/// (with everything in it).
fn a_namespace_made_outside_wasmco_is_never_deleted(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let namespace = format!("outside-{tag}");
    let theirs = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    cluster.kubectl_with_input(
        &["create", "--validate=false", "--filename=-"],
        &theirs.to_string(),
    );
    let listed = |annotations: &str| {
        format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {namespace}{annotations}}}\n")
    };
    let plain = deployment.instantiate(&format!("ns{tag}"), &[("ns", listed(""))]);
    deployment.wait_until(&plain, "the namespace refused", |rows| {
        rows.len() == 1 && rows[0].deployed == "Failed"
    });
    let adopting = deployment.instantiate(
        &format!("nsforce{tag}"),
        &[(
            "ns",
            listed(", annotations: {wasmco.io/force-apply: \"true\"}"),
        )],
    );
    deployment.wait_until(&adopting, "the namespace adopted", |rows| {
        all(rows, "Applied", "Ready")
    });
    for dig in [&plain, &adopting] {
        expect(action(&deployment.server, dig, "terminate"), 202);
    }
    deployment.wait_until(&adopting, "the namespace given back", |rows| {
        rows.len() == 1 && rows[0].deployed == "Released"
    });
    let held = cluster.kubectl(&["get", "namespace", &namespace, "--output=json"]);
    let held: serde_json::Value = serde_json::from_str(&held).unwrap();
    assert!(
        held["metadata"]["deletionTimestamp"].is_null(),
        "the namespace is being deleted: {held}"
    );
    assert!(held["metadata"]["labels"]["wasmco.io/deployment-intent-group"].is_null());
}

/// A watch sees an object deleted while the reconcile waits for another
/// object of the DIG that never becomes ready: the object is back at once,
/// not after the wait.
fn drift_is_repaired_while_another_object_is_not_ready(cluster: Cluster) {
    let mut deployment = Deployment::with_resync(&cluster, "10m");
    let tag = cluster.tag();
    let kept = format!("beside-{tag}");
    let stuck = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: stuck-{tag}, namespace: default}}\n\
         spec:\n  replicas: 1\n  selector: {{matchLabels: {{app: stuck}}}}\n  template:\n    \
         metadata: {{labels: {{app: stuck}}}}\n    spec:\n      containers: [{{name: c, image: \
         localhost/never:pulled}}]\n"
    );
    let dig = deployment.instantiate(
        &format!("waits{tag}"),
        &[(
            "app",
            [config_map(&kept, json!({"k": "1"})), stuck].concat(),
        )],
    );
    deployment.wait_until(&dig, "the ConfigMap ready, the Deployment not", |rows| {
        rows.len() == 2
            && rows.iter().all(|r| r.deployed == "Applied")
            && rows
                .iter()
                .any(|r| r.kind == "ConfigMap" && r.ready == "Ready")
    });
    // The reconcile is waiting on the Deployment now, for a minute, and the
    // watches are starting: nothing outside the server shows when they
    // have, so a moment for them.
    std::thread::sleep(Duration::from_secs(1));
    cluster.kubectl(&["delete", "configmap", &kept, "--namespace=default"]);
    wait_until(
        "the repair within 2 s while the Deployment is not ready",
        Duration::from_secs(2),
        || cluster.get("configmap", &kept).is_some(),
    );
    deployment.wait_until(&dig, "the repair recorded", |rows| {
        rows.iter().any(|r| {
            r.kind == "ConfigMap"
                && r.detail["drift"]["kind"] == "Deleted"
                && r.detail["drift"]["repaired"].is_string()
        })
    });
}

fn a_crd_then_its_objects(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    // The custom object comes first in the file; the CRD still goes first.
    let manifests = format!(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g-{tag}, namespace: default}}\nspec: {{size: 3}}\n---\n\
         apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: gadgets.example.com}}\n\
         spec: {{group: example.com, scope: Namespaced, names: {{plural: gadgets, singular: gadget, kind: Gadget}},\n  \
         versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]}}\n"
    );
    let dig = deployment.instantiate(&format!("crd{tag}"), &[("gadgets", manifests)]);
    deployment.wait_until(&dig, "the CRD and the gadget", |rows| {
        rows.len() == 2 && all(rows, "Applied", "Ready")
    });
    let gadget = cluster
        .get("gadgets.example.com", &format!("g-{tag}"))
        .expect("the gadget");
    assert_eq!(gadget["spec"]["size"], 3);
    deployment.check_against(&dig, &cluster);
}

fn kinds_without_a_controller_are_ready_once_there(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: s-{tag}, namespace: default}}\nstringData: {{k: v}}\n---\n\
         apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa-{tag}, namespace: default}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: role-{tag}, namespace: default}}\n\
         rules: [{{apiGroups: [''], resources: [configmaps], verbs: [get]}}]\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{tag}, namespace: default}}\n\
         spec: {{ports: [{{port: 80, targetPort: 8080}}], selector: {{app: x}}}}\n"
    );
    let dig = deployment.instantiate(&format!("plain{tag}"), &[("plain", manifests)]);
    deployment.wait_until(&dig, "all ready", |rows| {
        rows.len() == 4 && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);
    // Resyncs see the server's defaults (a Service's clusterIP, a
    // Secret's stringData turned into data) and take them for no drift.
    deployment.wait_for_resyncs(2);
    for row in deployment.rows(&dig) {
        assert!(
            row.detail.get("drift").is_none(),
            "{} {} drifted: {}",
            row.kind,
            row.name,
            row.detail
        );
    }
}

const MANY: usize = 120;

fn terminate_right_after_instantiate(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("quick{}", cluster.tag());
    let dig = deployment.instantiate(&project, &[("cfg", config_maps(&project, MANY))]);
    expect(action(&deployment.server, &dig, "terminate"), 202);
    deployment.wait_until(&dig, "everything deleted", |rows| {
        rows.len() == MANY && rows.iter().all(|r| r.deployed == "Deleted")
    });
    let label = format!("{project}/ca/v1/d");
    assert_eq!(cluster.labelled(&label), Vec::<String>::new());
    // Nothing superseded comes back later: an absence, which only time
    // passing shows.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(cluster.labelled(&label), Vec::<String>::new());
    deployment.check_against(&dig, &cluster);
}

fn instantiate_right_after_terminate(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("again{}", cluster.tag());
    let dig = deployment.instantiate(&project, &[("cfg", config_maps(&project, MANY))]);
    deployment.wait_until(&dig, "applied", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    expect(action(&deployment.server, &dig, "terminate"), 202);
    expect(action(&deployment.server, &dig, "instantiate"), 202);
    deployment.wait_until(&dig, "applied again", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    let label = format!("{project}/ca/v1/d");
    assert_eq!(cluster.labelled(&label).len(), MANY);
    // No late terminate: an absence, which only time passing shows.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        cluster.labelled(&label).len(),
        MANY,
        "a late terminate removed some"
    );
    deployment.check_against(&dig, &cluster);
}

fn killed_during_an_update_that_drops_objects(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("crash{}", cluster.tag());
    let dig = deployment.instantiate(&project, &[("cfg", config_maps(&project, MANY))]);
    deployment.wait_until(&dig, "applied", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    let kept = MANY / 4;
    let app = format!("/v2/projects/{project}/{CA}/apps/cfg");
    expect(
        deployment.server.replace_upload(
            &app,
            doc("cfg", json!({})),
            config_maps(&project, kept).into_bytes(),
        ),
        200,
    );
    expect(action(&deployment.server, &dig, "update"), 202);
    deployment.restart();
    let label = format!("{project}/ca/v1/d");
    wait_until("only the kept objects", SCENARIO_PATIENCE, || {
        cluster.labelled(&label).len() == kept
    });
    deployment.wait_until(&dig, "the update applied", |rows| {
        rows.len() == kept && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);
}

fn a_burst_of_updates_ends_at_the_last(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let project = format!("burst{}", cluster.tag());
    let revision = |rev: usize| {
        (0..30)
            .map(|i| config_map(&format!("{project}-{i}"), json!({"rev": rev.to_string()})))
            .collect::<String>()
    };
    let dig = deployment.instantiate(&project, &[("cfg", revision(0))]);
    deployment.wait_until(&dig, "applied", |rows| all(rows, "Applied", "Ready"));
    let app = format!("/v2/projects/{project}/{CA}/apps/cfg");
    for rev in 1..=10 {
        expect(
            deployment.server.replace_upload(
                &app,
                doc("cfg", json!({})),
                revision(rev).into_bytes(),
            ),
            200,
        );
        expect(action(&deployment.server, &dig, "update"), 202);
    }
    wait_until(
        "every object at the last revision",
        SCENARIO_PATIENCE,
        || {
            (0..30).all(|i| {
                cluster
                    .get("configmap", &format!("{project}-{i}"))
                    .is_some_and(|c| c["data"]["rev"] == "10")
            })
        },
    );
    deployment.wait_until(&dig, "the last revision applied", |rows| {
        rows.len() == 30 && all(rows, "Applied", "Ready")
    });
    deployment.check_against(&dig, &cluster);
}

/// Only the virtual cluster can be restarted empty here.
#[test]
fn a_cluster_that_restarts_empty_gets_everything_back() {
    let mut cluster = Cluster::virtual_cluster();
    let mut deployment = Deployment::new(&cluster);
    let project = "empty";
    let dig = deployment.instantiate(project, &[("cfg", config_maps(project, MANY))]);
    deployment.wait_until(&dig, "applied", |rows| {
        rows.len() == MANY && all(rows, "Applied", "Ready")
    });
    let health = |server: &Server| {
        expect(
            server.get("/v2/cluster-providers/lab/clusters/solo/status"),
            200,
        )
    };
    wait_until("the cluster reachable", SCENARIO_PATIENCE, || {
        health(&deployment.server)["state"] == "Reachable"
    });
    assert!(health(&deployment.server)["version"].is_string());
    let Cluster::Virtual(virtual_cluster) = &mut cluster else {
        unreachable!()
    };
    virtual_cluster.restart_empty("solo");
    wait_until("everything back", SCENARIO_PATIENCE, || {
        cluster.labelled("empty/ca/v1/d").len() == MANY
    });
    deployment.wait_until(&dig, "all applied", |rows| all(rows, "Applied", "Ready"));
    deployment.check_against(&dig, &cluster);
}

#[test]
fn stop_ends_the_work_in_progress_and_terminate_follows() {
    // 30 ms a request: the instantiate takes seconds, time to stop it.
    let cluster = Cluster::Virtual(Virtual::start_slow("solo", 30));
    let mut deployment = Deployment::new(&cluster);
    let dig = deployment.instantiate("halt", &[("cfg", config_maps("halt", MANY))]);
    wait_until("some applied", SCENARIO_PATIENCE, || {
        !cluster.labelled("halt/ca/v1/d").is_empty()
    });
    let stopped = expect(action(&deployment.server, &dig, "stop"), 202);
    assert_eq!(stopped["deployedStatus"], "InstantiateStopped");
    // An apply already sent may land (on a cluster that takes 30 ms to
    // answer); after that, nothing more: an absence, which only time
    // passing shows.
    std::thread::sleep(Duration::from_millis(500));
    let held = cluster.labelled("halt/ca/v1/d").len();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        cluster.labelled("halt/ca/v1/d").len(),
        held,
        "rsync went on"
    );
    assert!(held < MANY, "the instantiate finished before the stop");
    // Stopped is not an end: instantiate is refused, terminate cleans up.
    expect(action(&deployment.server, &dig, "instantiate"), 409);
    expect(action(&deployment.server, &dig, "terminate"), 202);
    deployment.wait_until(&dig, "everything deleted", |rows| {
        rows.iter().all(|r| r.deployed == "Deleted")
    });
    assert!(cluster.labelled("halt/ca/v1/d").is_empty());
    deployment.check_against(&dig, &cluster);
}

#[test]
fn an_unreachable_cluster_says_so_and_since_when() {
    let cluster = Cluster::virtual_cluster();
    let mut deployment = Deployment::new(&cluster);
    let dig = deployment.instantiate("away", &[("cfg", config_map("away", json!({})))]);
    deployment.wait_until(&dig, "applied", |rows| all(rows, "Applied", "Ready"));
    let connectivity = || {
        expect(deployment.server.get(&format!("{dig}/status")), 200)["apps"][0]["clusters"][0]
            ["connectivity"]
            .clone()
    };
    assert_eq!(connectivity(), "Available");
    let status = || {
        expect(
            deployment
                .server
                .get("/v2/cluster-providers/lab/clusters/solo/status"),
            200,
        )
    };
    wait_until("reachable", SCENARIO_PATIENCE, || {
        status()["state"] == "Reachable"
    });
    let up = status();
    drop(cluster);
    wait_until("unreachable", SCENARIO_PATIENCE, || {
        status()["state"] == "Unreachable"
    });
    let down = status();
    assert_ne!(down["since"], up["since"]);
    assert!(
        down["lastError"].as_str().is_some_and(|e| !e.is_empty()),
        "{down}"
    );
    assert_eq!(
        down["version"], up["version"],
        "the last version seen is kept"
    );
    // The DIG sends nothing to a settled cluster, yet it does not say
    // Available of a cluster the probes cannot reach.
    assert_eq!(connectivity(), "Retrying");
    // An unknown cluster is a 404, not Unknown.
    assert_eq!(
        deployment
            .server
            .get("/v2/cluster-providers/lab/clusters/nowhere/status")
            .status(),
        404
    );
}

/// EMCO's migrate: version v1's DIG hands its objects to version v2's.
/// What both have is taken over in place (never deleted and made again),
/// what only v1 had goes, what only v2 has comes.
fn a_migrate_hands_objects_to_the_next_version(cluster: Cluster) {
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let name = |n: &str| format!("move-{tag}-{n}");
    let project = format!("move{tag}");
    let v1 = [
        config_map(&name("kept"), json!({"k": "1"})),
        config_map(&name("dropped"), json!({"k": "1"})),
    ]
    .concat();
    let source = deployment.instantiate(&project, &[("cfg", v1)]);
    deployment.wait_until(&source, "v1 applied", |rows| {
        rows.len() == 2 && all(rows, "Applied", "Ready")
    });
    let uid = |n: &str| {
        cluster
            .get("configmap", &name(n))
            .map(|o| o["metadata"]["uid"].clone())
    };
    let kept_uid = uid("kept").expect("kept is there");

    let server = &deployment.server;
    let ca = format!("/v2/projects/{project}/composite-apps/ca");
    expect(
        server.post(
            &format!("/v2/projects/{project}/composite-apps"),
            doc("ca", json!({"compositeAppVersion": "v2"})),
        ),
        201,
    );
    let v2 = format!("{ca}/v2");
    let manifests = [
        config_map(&name("kept"), json!({"k": "2"})),
        config_map(&name("added"), json!({"k": "2"})),
    ]
    .concat();
    expect(
        server.upload(
            &format!("{v2}/apps"),
            doc("cfg", json!({})),
            Some(manifests.into_bytes()),
        ),
        201,
    );
    expect(
        server.post(&format!("{v2}/composite-profiles"), doc("prof", json!({}))),
        201,
    );
    expect(
        server.post(
            &format!("{v2}/deployment-intent-groups"),
            doc("d", json!({"compositeProfile": "prof", "version": "r2"})),
        ),
        201,
    );
    let target = format!("{v2}/deployment-intent-groups/d");
    // The target must be approved first, as EMCO has it.
    let body = json!({"metadata": {"description": "to v2"},
        "spec": {"targetCompositeAppVersion": "v2", "targetDeploymentIntentGroup": "d"}});
    let refused = expect(server.post(&format!("{source}/migrate"), body.clone()), 409);
    assert!(refused.to_string().contains("Created"), "{refused}");
    crate::support::clusters::place_on_solo_and_approve(server, &target, &["cfg"]);
    let state = expect(server.post(&format!("{source}/migrate"), body), 202);
    assert_eq!(state["deployedStatus"], "Instantiated", "{state}");
    assert_eq!(state["compositeAppVersion"], "v2", "{state}");
    deployment.wait_until(&target, "v2 applied", |rows| {
        rows.len() == 2 && all(rows, "Applied", "Ready")
    });
    wait_until("v1's own object removed", SCENARIO_PATIENCE, || {
        cluster.get("configmap", &name("dropped")).is_none()
    });
    let kept = cluster.get("configmap", &name("kept")).unwrap();
    assert_eq!(kept["data"]["k"], "2");
    assert_eq!(
        kept["metadata"]["uid"], kept_uid,
        "taken over, not made again"
    );
    assert_eq!(
        kept["metadata"]["labels"]["wasmco.io/deployment-intent-group"],
        owner_label(&format!("{project}/ca/v2/d"))
    );
    assert!(cluster.get("configmap", &name("added")).is_some());
    let source_state = expect(server.get(&format!("{source}/status")), 200);
    assert_eq!(
        source_state["deployedStatus"], "Terminated",
        "{source_state}"
    );
    // Settled: the next resyncs leave it so.
    deployment.wait_for_resyncs(2);
    assert_eq!(uid("kept"), Some(kept_uid));
    deployment.check_against(&target, &cluster);
}

/// A CertificateSigningRequest rsync applies is approved by rsync (EMCO's
/// rsync does so for the logical clouds' users); the real server keeps the
/// approval (it runs no signer here), the virtual one also signs.
fn a_certificate_request_is_approved(cluster: Cluster) {
    use base64::Engine;
    let mut deployment = Deployment::new(&cluster);
    let tag = cluster.tag();
    let name = format!("csr-{tag}");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("user-{tag}"));
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let manifest = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
                 "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}});
    deployment.instantiate(&format!("csr{tag}"), &[("user", manifest.to_string())]);
    let mut last = String::new();
    wait_until("the request approved", SCENARIO_PATIENCE, || {
        last = cluster.kubectl(&["get", "csr", &name, "--ignore-not-found", "--output=json"]);
        last.contains("\"Approved\"")
    });
    let csr: serde_json::Value = serde_json::from_str(&last).unwrap();
    let approved = &csr["status"]["conditions"][0];
    assert_eq!(approved["type"], "Approved", "{csr}");
    assert_eq!(approved["status"], "True", "{csr}");
    if let Cluster::Virtual(_) = cluster {
        wait_until("the certificate issued", SCENARIO_PATIENCE, || {
            let csr = cluster.kubectl(&["get", "csr", &name, "--output=json"]);
            csr.contains("\"certificate\"")
        });
    }
}

on_both!(
    apply_update_and_terminate,
    drift_is_repaired,
    a_conflict_is_reported_not_forced,
    keys_that_read_alike_stay_apart,
    a_namespace_made_outside_wasmco_is_never_deleted,
    a_crd_then_its_objects,
    kinds_without_a_controller_are_ready_once_there,
    terminate_right_after_instantiate,
    instantiate_right_after_terminate,
    killed_during_an_update_that_drops_objects,
    a_burst_of_updates_ends_at_the_last,
    a_certificate_request_is_approved,
    a_migrate_hands_objects_to_the_next_version,
);

/// On a virtual cluster whose workloads take an hour to become ready, and
/// on the real API server, which runs no controller to make them ready.
mod never_ready {
    use super::{Cluster, Virtual, drift_is_repaired_while_another_object_is_not_ready};

    #[test]
    fn virtual_cluster() {
        let hour = 3_600_000;
        drift_is_repaired_while_another_object_is_not_ready(Cluster::Virtual(Virtual::start_with(
            "solo", 0, hour,
        )));
    }

    #[test]
    fn api_server() {
        drift_is_repaired_while_another_object_is_not_ready(Cluster::api_server());
    }
}

/// Objects an older version labelled (the key with `/` as `.`, before the
/// hash) and wrote with this DIG's field manager are taken up: the one
/// still wanted is relabelled in place, the one no longer wanted deleted.
/// Only the real API server records field managers.
#[test]
fn objects_an_older_version_labelled_are_taken_up() {
    let cluster = Cluster::api_server();
    let mut deployment = Deployment::new(&cluster);
    let project = "legacy";
    let key = format!("{project}/ca/v1/d");
    for (name, manager) in [
        ("legacy-kept", format!("wasmco/{key}")),
        ("legacy-dropped", format!("wasmco/{key}")),
    ] {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default",
                "labels": {"wasmco.io/deployment-intent-group": "legacy.ca.v1.d", "wasmco.io/app": "cfg"}},
            "data": {"k": "old"}});
        cluster.kubectl_with_input(
            &[
                "apply",
                "--server-side",
                &format!("--field-manager={manager}"),
                "--filename=-",
            ],
            &object.to_string(),
        );
    }
    let dig = deployment.instantiate(
        project,
        &[("cfg", config_map("legacy-kept", json!({"k": "new"})))],
    );
    deployment.wait_until(&dig, "the older object taken up", |rows| {
        all(rows, "Applied", "Ready")
    });
    wait_until("the dropped one deleted", SCENARIO_PATIENCE, || {
        cluster.get("configmap", "legacy-dropped").is_none()
    });
    let kept = cluster.get("configmap", "legacy-kept").unwrap();
    assert_eq!(kept["data"]["k"], "new");
    assert_eq!(
        kept["metadata"]["labels"]["wasmco.io/deployment-intent-group"],
        owner_label(&key)
    );
}
