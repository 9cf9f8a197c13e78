//! A project's token reaches no further on the clusters than the tenancy
//! policy the admin sets: its objects land in its logical clouds'
//! namespaces, cluster-scoped kinds and bindings to ClusterRoles need the
//! admin's allowance, checked on what the controllers computed; its
//! logical clouds take nothing of another project's or of Kubernetes'.
//! The admin's own actions stay unconfined.

use serde_json::{Value, json};

use crate::clusters::harness::{Cluster, on_both};
use crate::http::{Api, Server, doc, expect, issue_token, refused, wasm};

const PROVIDER: &str = "/v2/cluster-providers/lab";

/// A server with cluster `lab/solo`, the gac controller, and projects
/// `shop` and `rival`; `rival`'s logical cloud `rival-lc` (namespace
/// `rival-ns-{tag}`, user `rival-user`) instantiated by the admin. On the
/// real API server, wasmco signs the clouds' users with its CA.
fn set_up(cluster: &Cluster, tag: &str) -> (tempfile::TempDir, Server) {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), &["--resync-interval", "1s"]);
    expect(
        server.post("/v2/cluster-providers", doc("lab", json!({}))),
        201,
    );
    server.register_cluster("lab", "solo", cluster.kubeconfig().0);
    if let Cluster::Real(real) = cluster {
        let pem = |file: &str| std::fs::read_to_string(real.pki.join(file)).unwrap();
        expect(
            server.post(
                &format!("{PROVIDER}/clusters/solo/ca"),
                json!({"certificate": pem("ca.crt"), "key": pem("ca.key")}),
            ),
            201,
        );
    }
    expect(
        server.upload(
            "/v2/controllers",
            doc("gac", json!({"type": "action", "priority": 10})),
            Some(wasm("gac.wasm")),
        ),
        201,
    );
    for project in ["shop", "rival"] {
        expect(server.post("/v2/projects", doc(project, json!({}))), 201);
    }
    let namespace = format!("rival-ns-{tag}");
    make_cloud(&server, "rival", "rival-lc", &namespace, "rival-user");
    expect(
        server.post(
            "/v2/projects/rival/logical-clouds/rival-lc/instantiate",
            json!({}),
        ),
        202,
    );
    (data, server)
}

/// Logical cloud `name` of `project` on `lab/solo`, not instantiated.
fn make_cloud(api: &Api, project: &str, name: &str, namespace: &str, user: &str) {
    let lc = format!("/v2/projects/{project}/logical-clouds");
    expect(
        api.post(
            &lc,
            doc(
                name,
                json!({"namespace": namespace, "user": {"userName": user}}),
            ),
        ),
        201,
    );
    expect(
        api.post(
            &format!("{lc}/{name}/cluster-references"),
            doc("solo", json!({"clusterProvider": "lab", "cluster": "solo"})),
        ),
        201,
    );
}

/// Composite app `ca` of `project` with app `app` (the manifests) placed on
/// `lab/solo` in DIG `name` (in `cloud`, if any), approved; its path.
fn dig(api: &Api, project: &str, name: &str, cloud: Option<&str>, manifests: &str) -> String {
    let ca = format!("/v2/projects/{project}/composite-apps/{name}/v1");
    expect(
        api.post(
            &format!("/v2/projects/{project}/composite-apps"),
            doc(name, json!({"compositeAppVersion": "v1"})),
        ),
        201,
    );
    expect(
        api.upload(
            &format!("{ca}/apps"),
            doc("app", json!({})),
            Some(manifests.as_bytes().to_vec()),
        ),
        201,
    );
    expect(
        api.post(&format!("{ca}/composite-profiles"), doc("prof", json!({}))),
        201,
    );
    let mut spec = json!({"compositeProfile": "prof", "version": "r1"});
    if let Some(cloud) = cloud {
        spec["logicalCloud"] = json!(cloud);
    }
    expect(
        api.post(&format!("{ca}/deployment-intent-groups"), doc("d", spec)),
        201,
    );
    let dig = format!("{ca}/deployment-intent-groups/d");
    expect(
        api.post(
            &format!("{dig}/generic-placement-intents"),
            doc("gpi", json!({})),
        ),
        201,
    );
    expect(
        api.post(
            &format!("{dig}/generic-placement-intents/gpi/app-intents"),
            doc("app", json!({"app": "app", "intent": {"allOf": [{"clusterProvider": "lab", "cluster": "solo"}]}})),
        ),
        201,
    );
    expect(
        api.post(
            &format!("{dig}/intents"),
            doc("i", json!({"intent": {"genericPlacementIntent": "gpi"}})),
        ),
        201,
    );
    expect(api.post(&format!("{dig}/approve"), json!({})), 202);
    dig
}

/// The API as an editor of project `shop` calls it.
fn shop_editor(server: &Server) -> Api {
    server.as_holder(&issue_token(
        server,
        "shop-editor",
        &["shop"],
        "editor",
        "1h",
    ))
}

fn config_map(name: &str, namespace: Option<&str>) -> String {
    let namespace = namespace.map_or(String::new(), |ns| format!(", namespace: {ns}"));
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{namespace}}}\ndata: {{k: v}}\n"
    )
}

fn cluster_role_binding(name: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": "system:authenticated"}]})
}

/// The 422 an action answers, with its message.
#[track_caller]
fn refused_with(response: reqwest::blocking::Response, words: &[&str]) -> String {
    let body = expect(response, 422);
    let message = body["message"].as_str().unwrap_or_default().to_owned();
    for word in words {
        assert!(message.contains(word), "{word:?} not in {message:?}");
    }
    message
}

fn wait_applied(api: &Api, dig: &str) {
    let started = std::time::Instant::now();
    loop {
        let status = expect(api.get(&format!("{dig}/status")), 200);
        if status["deployedCounts"]["Applied"].as_u64().unwrap_or(0) > 0
            && status["deployedCounts"]
                .as_object()
                .is_some_and(|c| c.len() == 1)
        {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "not applied: {status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Whether `cluster` holds `kind`/`name` (in `namespace`, for a namespaced kind).
fn holds(cluster: &Cluster, kind: &str, name: &str, namespace: Option<&str>) -> bool {
    let mut args = vec!["get", kind, name, "--ignore-not-found", "--output=name"];
    let namespace = namespace.map(|ns| format!("--namespace={ns}"));
    args.extend(namespace.as_deref());
    !cluster.kubectl(&args).trim().is_empty()
}

fn an_editor_reaches_no_further_than_its_namespaces(cluster: Cluster) {
    let tag = format!("{}e", cluster.tag());
    let (_data, server) = set_up(&cluster, &tag);
    let editor = shop_editor(&server);
    let (own_ns, rival_ns) = (format!("shop-ns-{tag}"), format!("rival-ns-{tag}"));
    make_cloud(&editor, "shop", "shop-lc", &own_ns, "shop-user");
    expect(
        editor.post(
            "/v2/projects/shop/logical-clouds/shop-lc/instantiate",
            json!({}),
        ),
        202,
    );

    // In its own cloud's namespace: deployed.
    let own = dig(
        &editor,
        "shop",
        "own",
        Some("shop-lc"),
        &config_map("mine", None),
    );
    expect(editor.post(&format!("{own}/instantiate"), json!({})), 202);
    wait_applied(&editor, &own);
    assert!(holds(&cluster, "configmap", "mine", Some(&own_ns)));

    // Without a cloud, `default` is no namespace of the project's.
    let loose = dig(&editor, "shop", "loose", None, &config_map("loose", None));
    refused_with(
        editor.post(&format!("{loose}/instantiate"), json!({})),
        &["ConfigMap loose in namespace default", "spec.namespaces"],
    );
    // Another project's namespace, named in the manifest.
    let theirs = dig(
        &editor,
        "shop",
        "theirs",
        Some("shop-lc"),
        &config_map("planted", Some(&rival_ns)),
    );
    refused_with(
        editor.post(&format!("{theirs}/instantiate"), json!({})),
        &[&format!("namespace {rival_ns}")],
    );
    // Cluster-wide power.
    let escalate = dig(
        &editor,
        "shop",
        "escalate",
        Some("shop-lc"),
        &cluster_role_binding(&format!("everyone-admin-{tag}"), "cluster-admin").to_string(),
    );
    refused_with(
        editor.post(&format!("{escalate}/instantiate"), json!({})),
        &[
            &format!("ClusterRoleBinding everyone-admin-{tag}"),
            "cluster-scoped",
            "spec.kinds",
        ],
    );
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\n\
               spec: {group: example.com, scope: Namespaced, names: {plural: gadgets, kind: Gadget}, versions: []}\n";
    let with_crd = dig(&editor, "shop", "crd", Some("shop-lc"), crd);
    refused_with(
        editor.post(&format!("{with_crd}/instantiate"), json!({})),
        &["CustomResourceDefinition"],
    );
    // A controller's addition is checked too: gac adds the binding.
    expect(
        editor.post(
            &format!("{own}/controller-intents"),
            doc(
                "sneak",
                json!({"resources": [{"app": "app",
                "manifest": cluster_role_binding(&format!("sneaked-{tag}"), "cluster-admin")}]}),
            ),
        ),
        201,
    );
    expect(
        editor.put(
            &format!("{own}/intents/i"),
            doc(
                "i",
                json!({"intent": {"genericPlacementIntent": "gpi", "gac": "sneak"}}),
            ),
        ),
        200,
    );
    refused_with(
        editor.post(&format!("{own}/update"), json!({})),
        &[
            &format!("ClusterRoleBinding sneaked-{tag}"),
            "cluster-scoped",
        ],
    );
    assert!(!holds(
        &cluster,
        "clusterrolebinding",
        &format!("sneaked-{tag}"),
        None
    ));

    // The policy is the admin's to set; the editor reads it.
    let policies = "/v2/projects/shop/tenancy-policies";
    let allowance = doc(
        "bindings",
        json!({"kinds": ["ClusterRoleBinding"], "clusterRoles": ["view"]}),
    );
    refused(
        editor.post(policies, allowance.clone()),
        403,
        None,
        "admin token",
    );
    refused(
        server.post(policies, doc("bad", json!({"kinds": ["not a kind!"]}))),
        400,
        Some("spec.kinds[0]"),
        "not a kind",
    );
    expect(server.post(policies, allowance), 201);
    expect(editor.get(&format!("{policies}/bindings")), 200);
    let view = dig(
        &editor,
        "shop",
        "view",
        Some("shop-lc"),
        &cluster_role_binding(&format!("everyone-views-{tag}"), "view").to_string(),
    );
    expect(editor.post(&format!("{view}/instantiate"), json!({})), 202);
    // The kind is allowed now, binding cluster-admin still is not.
    refused_with(
        editor.post(&format!("{escalate}/instantiate"), json!({})),
        &["binds ClusterRole cluster-admin", "spec.clusterRoles"],
    );
    // The admin's own action is not confined.
    expect(
        server.post(&format!("{escalate}/instantiate"), json!({})),
        202,
    );

    // A provider's policy applies to projects without one of their own.
    let rival = server.as_holder(&issue_token(
        &server,
        "rival-editor",
        &["rival"],
        "editor",
        "1h",
    ));
    let rival_default = dig(
        &rival,
        "rival",
        "plain",
        None,
        &config_map("rival-cm", None),
    );
    refused_with(
        rival.post(&format!("{rival_default}/instantiate"), json!({})),
        &["namespace default"],
    );
    expect(
        server.post(
            &format!("{PROVIDER}/tenancy-policies"),
            doc("default-ns", json!({"namespaces": ["default"]})),
        ),
        201,
    );
    expect(
        rival.post(&format!("{rival_default}/instantiate"), json!({})),
        202,
    );
    // shop has its own policy, which does not name `default`.
    refused_with(
        editor.post(&format!("{loose}/instantiate"), json!({})),
        &["namespace default"],
    );
}

fn a_projects_logical_cloud_takes_nothing_of_anothers_or_of_kubernetes(cluster: Cluster) {
    let tag = format!("{}c", cluster.tag());
    let (_data, server) = set_up(&cluster, &tag);
    let editor = shop_editor(&server);
    let rival_ns = format!("rival-ns-{tag}");
    let own = |name: &str| format!("{name}-{tag}");
    let instantiate = |name: &str| {
        editor.post(
            &format!("/v2/projects/shop/logical-clouds/{name}/instantiate"),
            json!({}),
        )
    };
    make_cloud(&editor, "shop", "squat", &rival_ns, "squatter");
    refused_with(
        instantiate("squat"),
        &[&format!("namespace {rival_ns}"), "another project's"],
    );
    make_cloud(
        &editor,
        "shop",
        "system",
        &own("shop-sys"),
        "system:kube-controller-manager",
    );
    refused_with(
        instantiate("system"),
        &["user system:kube-controller-manager"],
    );
    make_cloud(&editor, "shop", "copycat", &own("shop-copy"), "rival-user");
    refused_with(
        instantiate("copycat"),
        &["user rival-user", "another project's"],
    );
    make_cloud(&editor, "shop", "kube", "kube-system", "kube-user");
    refused_with(
        instantiate("kube"),
        &["namespace kube-system", "Kubernetes' own"],
    );

    make_cloud(&editor, "shop", "wide", &own("shop-wide"), "wide-user");
    expect(
        editor.post(
            "/v2/projects/shop/logical-clouds/wide/user-permissions",
            doc(
                "everywhere",
                json!({"namespace": "", "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
            ),
        ),
        201,
    );
    refused_with(
        instantiate("wide"),
        &["whole cluster", "spec.clusterWidePermissions"],
    );
    assert!(!holds(
        &cluster,
        "clusterrole",
        "shop-wide-clusterrole",
        None
    ));
    expect(
        server.post(
            "/v2/projects/shop/tenancy-policies",
            doc("wide", json!({"clusterWidePermissions": true})),
        ),
        201,
    );
    expect(instantiate("wide"), 202);

    // Nothing refused was made on the cluster.
    for namespace in [own("shop-sys"), own("shop-copy")] {
        assert!(
            !holds(&cluster, "namespace", &namespace, None),
            "{namespace} was made"
        );
    }
}

// On the virtual cluster and on a real API server: the refusals are the
// orchestrator's, before anything reaches a cluster, whichever it is.
on_both!(
    an_editor_reaches_no_further_than_its_namespaces,
    a_projects_logical_cloud_takes_nothing_of_anothers_or_of_kubernetes,
);

/// On a real API server, which enforces RBAC: a project's logical cloud
/// user works in its namespace and cannot read another project's Secrets.
#[test]
fn a_clouds_user_cannot_read_another_projects_secrets_on_a_real_api_server() {
    use crate::kube_apiserver::{ApiServer, kubectl};
    let real = ApiServer::shared();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    expect(
        server.post("/v2/cluster-providers", doc("lab", json!({}))),
        201,
    );
    server.register_cluster("lab", "solo", &real.kubeconfig);
    // wasmco signs the clouds' users with the cluster's own CA.
    let pem = |file: &str| std::fs::read_to_string(real.pki.join(file)).unwrap();
    expect(
        server.post(
            &format!("{PROVIDER}/clusters/solo/ca"),
            json!({"certificate": pem("ca.crt"), "key": pem("ca.key")}),
        ),
        201,
    );
    for (project, namespace) in [("shop", "tenancy-shop"), ("rival", "tenancy-rival")] {
        expect(server.post("/v2/projects", doc(project, json!({}))), 201);
        let editor = server.as_holder(&issue_token(
            &server,
            &format!("{project}-editor"),
            &[project],
            "editor",
            "1h",
        ));
        make_cloud(
            &editor,
            project,
            "lc",
            namespace,
            &format!("tenancy-{project}-user"),
        );
        expect(
            editor.post(
                &format!("/v2/projects/{project}/logical-clouds/lc/instantiate"),
                json!({}),
            ),
            202,
        );
    }
    let started = std::time::Instant::now();
    while !kubectl(
        &real.kubeconfig_path,
        &[
            "get",
            "rolebinding",
            "lc-rolebinding",
            "--namespace=tenancy-rival",
        ],
    )
    .status
    .success()
    {
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let secret = kubectl(
        &real.kubeconfig_path,
        &[
            "create",
            "secret",
            "generic",
            "crown-jewels",
            "--namespace=tenancy-rival",
            "--from-literal=k=v",
        ],
    );
    assert!(secret.status.success(), "{secret:?}");

    let shop_kubeconfig = data.path().join("shop.kubeconfig");
    let answer =
        server.get("/v2/projects/shop/logical-clouds/lc/cluster-references/solo/kubeconfig");
    assert_eq!(answer.status().as_u16(), 200);
    std::fs::write(&shop_kubeconfig, answer.bytes().unwrap()).unwrap();
    let own = kubectl(
        &shop_kubeconfig,
        &["get", "configmaps", "--namespace=tenancy-shop"],
    );
    assert!(
        own.status.success(),
        "the user works in its own namespace: {own:?}"
    );
    let stolen = kubectl(
        &shop_kubeconfig,
        &["get", "secrets", "--namespace=tenancy-rival"],
    );
    assert!(
        !stolen.status.success(),
        "another project's Secrets were read"
    );
    let said = String::from_utf8_lossy(&stolen.stderr);
    assert!(
        said.contains("Forbidden") || said.contains("forbidden"),
        "{said}"
    );
}
