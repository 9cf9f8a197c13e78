//! A project's token reaches no further on the clusters than the tenancy
//! policy the admin sets: its objects land in its logical clouds'
//! namespaces, cluster-scoped kinds and bindings to ClusterRoles need the
//! admin's allowance, checked on what the controllers computed; its
//! logical clouds take nothing of another project's or of Kubernetes'.
//! The admin's own actions stay unconfined.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::clusters::{Cluster, SCENARIO_PATIENCE, on_both};
use crate::support::server::{Api, Server, doc, expect, issue_token, refused, wasm};
use crate::support::wait::{eventually, wait_until};

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
    eventually(format!("{dig} applied"), SCENARIO_PATIENCE, || {
        let status = expect(api.get(&format!("{dig}/status")), 200);
        if status["deployedCounts"]["Applied"].as_u64().unwrap_or(0) > 0
            && status["deployedCounts"]
                .as_object()
                .is_some_and(|c| c.len() == 1)
        {
            Ok(())
        } else {
            Err(format!("not applied: {status}"))
        }
    });
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
    make_cloud(&editor, "shop", "shop-lc", &own_ns, "shop:user");
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

    // Without a cloud, it would run with the cluster's own credentials.
    let loose = dig(&editor, "shop", "loose", None, &config_map("loose", None));
    refused_with(
        editor.post(&format!("{loose}/instantiate"), json!({})),
        &["spec.logicalCloud", "spec.clusterCredentials"],
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
        &["spec.clusterCredentials"],
    );
    expect(
        server.post(
            &format!("{PROVIDER}/tenancy-policies"),
            doc("credentials", json!({"clusterCredentials": true})),
        ),
        201,
    );
    // Allowed the clusters' credentials, it is still held to its namespaces.
    refused_with(
        rival.post(&format!("{rival_default}/instantiate"), json!({})),
        &["ConfigMap rival-cm in namespace default", "spec.namespaces"],
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
    // shop has its own policy, which allows neither.
    refused_with(
        editor.post(&format!("{loose}/instantiate"), json!({})),
        &["spec.clusterCredentials"],
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
    make_cloud(&editor, "shop", "squat", &rival_ns, "shop:squatter");
    refused_with(
        instantiate("squat"),
        &[&format!("namespace {rival_ns} is another project's")],
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
    refused_with(instantiate("copycat"), &["user rival-user", "shop:<name>"]);
    make_cloud(&editor, "shop", "kube", "kube-system", "shop:kube");
    refused_with(
        instantiate("kube"),
        &["namespace kube-system", "Kubernetes' own"],
    );

    make_cloud(&editor, "shop", "wide", &own("shop-wide"), "shop:wide");
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
    let wide_role = wasmco_core::cloud::cloud_object_name("shop", "wide", "clusterrole");
    assert!(!holds(&cluster, "clusterrole", &wide_role, None));
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

/// Once no resource of `path` (a DIG's or a logical cloud's) is Pending:
/// per `Kind name`, its deployed status and message.
fn settled(api: &Api, path: &str) -> BTreeMap<String, (String, String)> {
    eventually(format!("{path} settled"), SCENARIO_PATIENCE, || {
        let status = expect(api.get(&format!("{path}/status?output=detail")), 200);
        let mut found = BTreeMap::new();
        for app in status["apps"].as_array().into_iter().flatten() {
            for cluster in app["clusters"].as_array().into_iter().flatten() {
                for resource in cluster["resources"].as_array().into_iter().flatten() {
                    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                    found.insert(
                        format!(
                            "{} {}",
                            text(&resource["GVK"]["Kind"]),
                            text(&resource["name"])
                        ),
                        (
                            text(&resource["deployedStatus"]),
                            text(&resource["message"]),
                        ),
                    );
                }
            }
        }
        if !found.is_empty() && found.values().all(|(state, _)| state != "Pending") {
            Ok(found)
        } else {
            Err(format!("still pending: {status}"))
        }
    })
}

/// The labels `cluster`'s namespace `name` carries, once it has `until`.
fn namespace_labels(cluster: &Cluster, name: &str, until: &str) -> Value {
    eventually(format!("{name} to get {until}"), SCENARIO_PATIENCE, || {
        let args = [
            "get",
            "namespace",
            name,
            "--ignore-not-found",
            "--output=json",
        ];
        let namespace: Value = serde_json::from_str(&cluster.kubectl(&args)).unwrap_or_default();
        let labels = namespace["metadata"]["labels"].clone();
        if labels.get(until).is_some() {
            Ok(labels)
        } else {
            Err(labels)
        }
    })
}

fn a_deployed_cloud_keeps_the_namespace_and_user_it_was_checked_with(cluster: Cluster) {
    let tag = format!("{}k", cluster.tag());
    let (_data, server) = set_up(&cluster, &tag);
    let editor = shop_editor(&server);
    let own_ns = format!("shop-ns-{tag}");
    make_cloud(&editor, "shop", "kept", &own_ns, "shop:user");
    let lc = "/v2/projects/shop/logical-clouds/kept";
    expect(editor.post(&format!("{lc}/instantiate"), json!({})), 202);
    let spec = |namespace: &str, user: &str| {
        doc(
            "kept",
            json!({"namespace": namespace, "user": {"userName": user},
                   "labels": {"team": "shop", "pod-security.kubernetes.io/enforce": "privileged"}}),
        )
    };
    // Moved while deployed, to Kubernetes' namespace or to another user: refused.
    for (edited, field) in [
        (spec("kube-system", "shop:user"), "spec.namespace"),
        (spec(&own_ns, "shop:admin"), "spec.user.userName"),
    ] {
        let said = expect(editor.put(lc, edited), 409);
        assert!(
            said["message"].as_str().unwrap_or_default().contains(field),
            "{said}"
        );
    }
    // Its labels may change: an update puts them on its namespace, with
    // the policy's Pod Security level rather than the one they name.
    expect(editor.put(lc, spec(&own_ns, "shop:user")), 200);
    expect(editor.post(&format!("{lc}/update"), json!({})), 202);
    let labels = namespace_labels(&cluster, &own_ns, "team");
    assert_eq!(labels["team"], "shop");
    assert_eq!(labels["pod-security.kubernetes.io/enforce"], "baseline");

    let sneaky = dig(
        &editor,
        "shop",
        "sneaky",
        Some("kept"),
        &config_map("x", Some("kube-system")),
    );
    refused_with(
        editor.post(&format!("{sneaky}/instantiate"), json!({})),
        &["namespace kube-system"],
    );
    // A DIG deployed in it holds it up: the cloud is not terminated under it.
    let own = dig(
        &editor,
        "shop",
        "kept-own",
        Some("kept"),
        &config_map("mine", None),
    );
    expect(editor.post(&format!("{own}/instantiate"), json!({})), 202);
    let busy = expect(editor.post(&format!("{lc}/terminate"), json!({})), 409);
    assert!(
        busy["message"]
            .as_str()
            .unwrap_or_default()
            .contains("shop/kept-own/v1/d"),
        "{busy}"
    );
    expect(editor.post(&format!("{own}/terminate"), json!({})), 202);
    expect(editor.post(&format!("{lc}/terminate"), json!({})), 202);
    expect(
        editor.put(lc, spec(&format!("elsewhere-{tag}"), "shop:user")),
        200,
    );
}

fn a_project_takes_nothing_made_outside_wasmco(cluster: Cluster) {
    let tag = format!("{}o", cluster.tag());
    let (_data, server) = set_up(&cluster, &tag);
    let editor = shop_editor(&server);
    // A namespace someone else made: the cloud's Role and RoleBinding do
    // not go into it either.
    let outside = format!("outside-{tag}");
    // (As JSON: the virtual cluster reads no protobuf.)
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": outside}});
    cluster.kubectl_with_input(
        &["create", "--validate=false", "--filename=-"],
        &namespace.to_string(),
    );
    make_cloud(&editor, "shop", "outsider", &outside, "shop:outsider");
    let outsider = "/v2/projects/shop/logical-clouds/outsider";
    expect(
        editor.post(&format!("{outsider}/instantiate"), json!({})),
        202,
    );
    let statuses = settled(&editor, outsider);
    let (state, message) = &statuses[&format!("Namespace {outside}")];
    assert_eq!(state, "Failed");
    assert!(message.contains("not made by wasmco"), "{message}");
    for object in ["Role outsider-role", "RoleBinding outsider-rolebinding"] {
        let (state, message) = &statuses[object];
        assert_eq!(state, "Failed", "{object}");
        assert!(
            message.contains(&format!("its namespace {outside} was not made")),
            "{message}"
        );
    }
    assert!(!holds(&cluster, "role", "outsider-role", Some(&outside)));
    assert!(!holds(
        &cluster,
        "rolebinding",
        "outsider-rolebinding",
        Some(&outside)
    ));

    // In its own namespace, an object made outside wasmco is not taken
    // over, even when the manifest asks to.
    let own_ns = format!("shop-ns-{tag}");
    make_cloud(&editor, "shop", "home", &own_ns, "shop:user");
    let lc = "/v2/projects/shop/logical-clouds/home";
    expect(editor.post(&format!("{lc}/instantiate"), json!({})), 202);
    settled(&editor, lc);
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "theirs", "namespace": own_ns}, "data": {"k": "original"}});
    cluster.kubectl_with_input(
        &["create", "--validate=false", "--filename=-"],
        &theirs.to_string(),
    );
    let forced = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs, annotations: \
                  {wasmco.io/force-apply: \"true\"}}\ndata: {k: replaced}\n";
    let take = dig(&editor, "shop", "take", Some("home"), forced);
    expect(editor.post(&format!("{take}/instantiate"), json!({})), 202);
    let (state, message) = &settled(&editor, &take)["ConfigMap theirs"];
    assert_eq!(state, "Failed");
    assert!(message.contains("does not take over"), "{message}");
    let data = cluster.kubectl(&[
        "get",
        "configmap",
        "theirs",
        &format!("--namespace={own_ns}"),
        "--output=jsonpath={.data.k}",
    ]);
    assert_eq!(data, "original");
}

// On the virtual cluster and on a real API server: the refusals are the
// orchestrator's, before anything reaches a cluster, whichever it is.
on_both!(
    an_editor_reaches_no_further_than_its_namespaces,
    a_projects_logical_cloud_takes_nothing_of_anothers_or_of_kubernetes,
    a_deployed_cloud_keeps_the_namespace_and_user_it_was_checked_with,
    a_project_takes_nothing_made_outside_wasmco,
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
            &format!("{project}:user"),
        );
        expect(
            editor.post(
                &format!("/v2/projects/{project}/logical-clouds/lc/instantiate"),
                json!({}),
            ),
            202,
        );
    }
    wait_until("the rival's RoleBinding", SCENARIO_PATIENCE, || {
        kubectl(
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
    });
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

    // Its namespace enforces the policy's Pod Security level (baseline by
    // default): a Pod mounting the node's root is refused by the API
    // server, a plain one is not.
    let shop = server.as_holder(&issue_token(
        &server,
        "shop-deployer",
        &["shop"],
        "editor",
        "1h",
    ));
    // (No controller manager runs here to make it.)
    let account = kubectl(
        &real.kubeconfig_path,
        &[
            "create",
            "serviceaccount",
            "default",
            "--namespace=tenancy-shop",
        ],
    );
    assert!(account.status.success(), "{account:?}");
    let pods = "apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\n\
                spec: {containers: [{name: c, image: busybox}]}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: root}\n\
                spec: {containers: [{name: c, image: busybox}], volumes: [{name: node, hostPath: {path: /}}]}\n";
    let pods = dig(&shop, "shop", "pods", Some("lc"), pods);
    expect(shop.post(&format!("{pods}/instantiate"), json!({})), 202);
    let statuses = settled(&shop, &pods);
    assert_eq!(statuses["Pod plain"].0, "Applied", "{statuses:?}");
    let (state, message) = &statuses["Pod root"];
    assert_eq!(state, "Failed");
    assert!(message.contains("PodSecurity"), "{message}");
}
