//! Logical clouds end to end: a real `wasmco serve`, two virtual clusters
//! with their own CAs, the namespace, Role, RoleBinding and quota applied by
//! rsync, the user's kubeconfig per cluster, and terminate removing it all.

use std::time::Duration;

use serde_json::{Value, json};
use wasmco_core::cloud::cloud_object_name;

use crate::support::server::{Server, Virtual, doc, expect, refused};
use crate::support::wait::{eventually, wait_until};

const LC: &str = "/v2/projects/shop/logical-clouds/team-a";

/// How long a logical cloud or its DIG may take to get where a step sends it.
const PATIENCE: Duration = Duration::from_secs(30);

fn wait_for(server: &Server, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually(what, PATIENCE, || {
        let status = expect(server.get(&format!("{LC}/status?status=ready")), 200);
        let deployed = expect(server.get(&format!("{LC}/status")), 200);
        if done(&status) && done(&deployed) {
            Ok(deployed)
        } else {
            Err(format!("{status} {deployed}"))
        }
    })
}

#[test]
fn a_logical_cloud_gives_its_user_a_namespace_on_each_cluster() {
    let clusters = [Virtual::start("east"), Virtual::start("west")];
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    for (name, cluster) in ["east", "west"].iter().zip(&clusters) {
        expect(
            server.upload(
                "/v2/cluster-providers/edge/clusters",
                doc(name, json!({})),
                Some(cluster.kubeconfig.clone()),
            ),
            201,
        );
    }
    expect(server.post("/v2/projects", doc("shop", json!({}))), 201);
    expect(
        server.post(
            "/v2/projects/shop/logical-clouds",
            doc(
                "team-a",
                json!({"namespace": "team-a", "user": {"userName": "alice"}}),
            ),
        ),
        201,
    );
    refused(
        server.post(
            "/v2/projects/shop/logical-clouds",
            doc(
                "bad",
                json!({"namespace": "Team A", "user": {"userName": "bob"}}),
            ),
        ),
        400,
        Some("spec.namespace"),
        "namespace",
    );
    // No cluster yet: nothing to instantiate on.
    refused(
        server.post(&format!("{LC}/instantiate"), json!({})),
        422,
        None,
        "references no cluster",
    );
    for name in ["east", "west"] {
        expect(
            server.post(
                &format!("{LC}/cluster-references"),
                doc(name, json!({"clusterProvider": "edge", "cluster": name})),
            ),
            201,
        );
    }
    expect(
        server.post(
            &format!("{LC}/user-permissions"),
            doc("read-apps", json!({"apiGroups": ["", "apps"], "resources": ["pods", "deployments"], "verbs": ["get", "list", "watch"]})),
        ),
        201,
    );
    // A privileged cloud: rules for kube-system, and for the whole cluster.
    expect(
        server.post(
            &format!("{LC}/user-permissions"),
            doc("system", json!({"namespace": "kube-system", "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{LC}/user-permissions"),
            doc("everywhere", json!({"namespace": "", "apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]})),
        ),
        201,
    );
    expect(
        server.post(
            &format!("{LC}/cluster-quotas"),
            doc("small", json!({"pods": "10", "limits.cpu": "4"})),
        ),
        201,
    );
    // east has a CA in the store, which signs alice's certificate; west
    // has none, so west signs it itself through the CSR API.
    let path = "/v2/cluster-providers/edge/clusters/east/ca";
    expect(server.client.post(server.url(path)).send().unwrap(), 201);
    let answer = expect(server.post(&format!("{LC}/instantiate"), json!({})), 202);
    assert_eq!(answer["deployedStatus"], "Instantiated");
    refused(
        server.post(&format!("{LC}/instantiate"), json!({})),
        409,
        None,
        "it is Instantiated",
    );
    refused(
        server.delete(LC),
        409,
        None,
        "terminate it before deleting it",
    );
    // A cluster in use by the logical cloud cannot go.
    refused(
        server.delete("/v2/cluster-providers/edge/clusters/east"),
        409,
        None,
        "in use",
    );

    wait_for(&server, "ready", |s| {
        s["readyStatus"] == "Ready" || s["deployedCounts"] == json!({"Applied": 17})
    });
    for cluster in &clusters {
        assert!(cluster.object("/api/v1/namespaces/team-a").is_some());
        let role = cluster
            .object("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles/team-a-role")
            .unwrap();
        assert_eq!(role["rules"][0]["verbs"], json!(["get", "list", "watch"]));
        assert_eq!(
            role["rules"][0]["resources"],
            json!(["pods", "deployments"])
        );
        let binding = cluster
            .object("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings/team-a-rolebinding")
            .unwrap();
        assert_eq!(binding["subjects"][0]["name"], "alice");
        assert_eq!(binding["roleRef"]["name"], "team-a-role");
        // Each rule where it applies, not copied into the cloud's namespace.
        assert_eq!(role["rules"].as_array().map(Vec::len), Some(1), "{role}");
        let system = cluster
            .object("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/team-a-kube-system-role")
            .unwrap();
        assert_eq!(system["rules"][0]["resources"], json!(["configmaps"]));
        assert!(cluster
            .object("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/team-a-kube-system-rolebinding")
            .is_some());
        let cluster_role = cluster
            .object(&format!(
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/{}",
                cloud_object_name("shop", "team-a", "clusterrole")
            ))
            .unwrap();
        assert_eq!(cluster_role["rules"][0]["resources"], json!(["nodes"]));
        let cluster_binding = cluster
            .object(&format!(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
                cloud_object_name("shop", "team-a", "clusterrolebinding")
            ))
            .unwrap();
        assert_eq!(cluster_binding["subjects"][0]["name"], "alice");
        let quota = cluster
            .object("/api/v1/namespaces/team-a/resourcequotas/team-a-quota")
            .unwrap();
        assert_eq!(
            quota["spec"]["hard"],
            json!({"pods": "10", "limits.cpu": "4"})
        );
    }

    // alice's kubeconfig for each cluster: its server, her certificate, her
    // namespace; east's certificate comes from its stored CA, west's from
    // the request west approved and signed.
    use base64::Engine;
    let decode = |data: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap()
    };
    for (name, cluster) in ["east", "west"].iter().zip(&clusters) {
        let response = server.get(&format!("{LC}/cluster-references/{name}/kubeconfig"));
        assert_eq!(response.status(), 200);
        let text = response.text().unwrap();
        let config = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let raw: Value = serde_norway::from_str(&text).unwrap();
        let entry = config.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(entry.server.as_deref(), Some(cluster.base.as_str()));
        let context = config.contexts[0].context.as_ref().unwrap();
        assert_eq!(context.namespace.as_deref(), Some("team-a"));
        let user = config.auth_infos[0].auth_info.as_ref().unwrap();
        let cert_pem = decode(user.client_certificate_data.as_deref().unwrap());
        let (_, cert_der) = x509_parser::pem::parse_x509_pem(&cert_pem).unwrap();
        let cert = cert_der.parse_x509().unwrap();
        assert_eq!(
            cert.subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "alice"
        );
        let key_pem = decode(raw["users"][0]["user"]["client-key-data"].as_str().unwrap());
        let key = rcgen::KeyPair::from_pem(std::str::from_utf8(&key_pem).unwrap()).unwrap();
        assert_eq!(
            cert.public_key().subject_public_key.data.as_ref(),
            key.public_key_raw(),
            "the certificate is for the key in the kubeconfig"
        );
        let csr = cluster.object(&format!(
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/{}",
            cloud_object_name("shop", "team-a", "user-csr")
        ));
        if *name == "east" {
            assert!(csr.is_none(), "a cluster with a stored CA gets no request");
            let ca_pem = expect(
                server.get(&format!("/v2/cluster-providers/edge/clusters/{name}/ca")),
                200,
            )["certificate"]
                .as_str()
                .unwrap()
                .to_owned();
            let (_, ca_der) = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes()).unwrap();
            let ca = ca_der.parse_x509().unwrap();
            cert.verify_signature(Some(ca.public_key())).unwrap();
        } else {
            let csr = csr.expect("west got alice's certificate request");
            assert_eq!(csr["status"]["conditions"][0]["type"], "Approved", "{csr}");
            let issued = decode(csr["status"]["certificate"].as_str().unwrap());
            assert_eq!(issued, cert_pem, "the kubeconfig holds what west issued");
        }
    }

    deploy_in_the_cloud(&server, &clusters);

    let answer = expect(server.post(&format!("{LC}/terminate"), json!({})), 202);
    assert_eq!(answer["deployedStatus"], "Terminated");
    wait_for(&server, "deleted", |s| {
        s.get("deployedCounts")
            .is_none_or(|c| c == &json!({"Deleted": 17}))
    });
    for cluster in &clusters {
        assert!(cluster.object("/api/v1/namespaces/team-a").is_none());
        assert!(
            cluster
                .object("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles/team-a-role")
                .is_none()
        );
    }
    // The DIG still names the cloud: the cloud stays while it does.
    refused(server.delete(LC), 409, None, "in use");
}

/// A DIG in the cloud: its objects land in the cloud's namespace, on the
/// cloud's clusters only, applied with alice's kubeconfigs.
fn deploy_in_the_cloud(server: &Server, clusters: &[Virtual; 2]) {
    let outside = Virtual::start("north");
    server.register_cluster("edge", "north", &outside.kubeconfig);
    let ca = "/v2/projects/shop/composite-apps/store/v1";
    expect(
        server.post(
            "/v2/projects/shop/composite-apps",
            doc("store", json!({"compositeAppVersion": "v1"})),
        ),
        201,
    );
    let manifests =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: cloud}\n";
    expect(
        server.upload(
            &format!("{ca}/apps"),
            doc("web", json!({})),
            Some(manifests.as_bytes().to_vec()),
        ),
        201,
    );
    expect(
        server.post(&format!("{ca}/composite-profiles"), doc("prof", json!({}))),
        201,
    );
    let spec = json!({"compositeProfile": "prof", "version": "r1", "logicalCloud": "team-a"});
    expect(
        server.post(&format!("{ca}/deployment-intent-groups"), doc("live", spec)),
        201,
    );
    let dig = format!("{ca}/deployment-intent-groups/live");
    // Every cluster labelled zone-a, north too: the cloud narrows it to its own.
    for cluster in ["east", "west", "north"] {
        expect(
            server.post(
                &format!("/v2/cluster-providers/edge/clusters/{cluster}/labels"),
                json!({"clusterLabel": "zone-a"}),
            ),
            201,
        );
    }
    let zone = json!({"allOf": [{"clusterProvider": "edge", "clusterLabel": "zone-a"}]});
    crate::support::clusters::place_and_approve(server, &dig, &[("web", zone)]);
    expect(server.post(&format!("{dig}/instantiate"), json!({})), 202);
    eventually("the DIG's objects in the namespace", PATIENCE, || {
        if clusters.iter().all(|c| {
            c.object("/api/v1/namespaces/team-a/configmaps/settings")
                .is_some()
        }) {
            Ok(())
        } else {
            Err(expect(server.get(&format!("{dig}/status")), 200))
        }
    });
    assert!(
        clusters[0]
            .object("/api/v1/namespaces/default/configmaps/settings")
            .is_none()
    );
    assert!(
        outside
            .object("/api/v1/namespaces/team-a/configmaps/settings")
            .is_none()
    );
    expect(server.post(&format!("{dig}/terminate"), json!({})), 202);
    wait_until("the DIG's objects to go after terminate", PATIENCE, || {
        clusters.iter().all(|c| {
            c.object("/api/v1/namespaces/team-a/configmaps/settings")
                .is_none()
        })
    });
}

#[test]
fn an_admin_logical_cloud_takes_emcos_bodies_and_marks_its_clusters_usable() {
    let cluster = Virtual::start("east");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    server.register_cluster("edge", "east", &cluster.kubeconfig);
    expect(server.post("/v2/projects", doc("shop", json!({}))), 201);
    let clouds = "/v2/projects/shop/logical-clouds";
    // EMCO's admin cloud: level "0", no namespace, no user.
    expect(
        server.post(clouds, doc("default", json!({"level": "0"}))),
        201,
    );
    // A standard cloud still needs its namespace, and a level is 0 or 1.
    refused(
        server.post(
            clouds,
            doc("std", json!({"level": "1", "user": {"userName": "u"}})),
        ),
        400,
        Some("spec.namespace"),
        "level \"0\"",
    );
    refused(
        server.post(clouds, doc("odd", json!({"level": "2"}))),
        400,
        Some("spec.level"),
        "admin",
    );
    // EMCO does not require a standard cloud's user: the project's own
    // name for it is given.
    let made = expect(
        server.post(clouds, doc("plain", json!({"namespace": "plain-ns"}))),
        201,
    );
    assert_eq!(made["spec"]["user"]["userName"], "shop:plain", "{made}");
    let stored = expect(server.get(&format!("{clouds}/plain")), 200);
    assert_eq!(stored["spec"]["user"]["userName"], "shop:plain");
    // EMCO spells the load balancer's address more than one way.
    let admin = format!("{clouds}/default");
    for (name, spelling) in [("east-1", "loadbalancerIp"), ("east-2", "loadBalancerIP")] {
        let spec = json!({"clusterProvider": "edge", "cluster": "east", spelling: "0.0.0.0"});
        expect(
            server.post(&format!("{admin}/cluster-references"), doc(name, spec)),
            201,
        );
    }
    let state = expect(server.post(&format!("{admin}/instantiate"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "Instantiated", "{state}");
    // Nothing is made on the cluster: no namespace, role or binding.
    let status = expect(server.get(&format!("{admin}/status")), 200);
    let resources: Vec<&Value> = status["apps"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["clusters"].as_array().into_iter().flatten())
        .flat_map(|c| c["resources"].as_array().into_iter().flatten())
        .collect();
    assert!(resources.is_empty(), "{status}");
    // EMCO's kv-pairs on a logical cloud, read whole or by key.
    let kv = json!({"kv": [{"region": "eu"}, {"tier": "gold"}]});
    expect(
        server.post(&format!("{admin}/kv-pairs"), doc("facts", kv)),
        201,
    );
    let answer = expect(server.get(&format!("{admin}/kv-pairs/facts?key=tier")), 200);
    assert_eq!(answer, json!({"value": "gold"}));
    refused(
        server.get(&format!("{admin}/kv-pairs/facts?key=zone")),
        404,
        Some("key"),
        "no key \"zone\"",
    );
    // update makes a new revision; stop halts rsync; terminate still ends it.
    let state = expect(server.post(&format!("{admin}/update"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "Updated", "{state}");
    assert_eq!(state["revision"], 2, "{state}");
    let state = expect(server.post(&format!("{admin}/stop"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "InstantiateStopped", "{state}");
    refused(
        server.post(&format!("{admin}/update"), json!({})),
        409,
        None,
        "InstantiateStopped",
    );
    let state = expect(server.post(&format!("{admin}/terminate"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "Terminated", "{state}");
    let state = expect(server.post(&format!("{admin}/stop"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "TerminateStopped", "{state}");
    refused(
        server.post(&format!("{clouds}/none/stop"), json!({})),
        404,
        None,
        "none",
    );
}
