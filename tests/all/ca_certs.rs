//! EMCO's ca-certs refusing what they cannot do: bad bodies by field, an
//! issuer that is not there or cannot sign, actions out of order, edits
//! and deletes of what is deployed, and a project's token; nothing stored
//! is changed by a refusal. `emco_flows` runs EMCO's own test-cert flow.

use serde_json::{Value, json};

use crate::emco_flows::kubectl_apply;
use crate::kube_apiserver::kubectl;
use crate::support::server::{Server, Virtual, doc, expect, issue_token, refused};
use crate::support::wait::eventually;

const CERT: &str = "/v2/cluster-providers/edge/ca-certs/mesh";

fn cert_spec(issuer: &str) -> Value {
    json!({"issuerRef": {"name": issuer, "kind": "ClusterIssuer", "group": "cert-manager.io"},
           "issuingCluster": {"cluster": "hub", "clusterProvider": "edge"},
           "csrInfo": {"keySize": 256, "algorithm": {"publicKeyAlgorithm": "ECDSA"}}})
}

/// `kubectl apply` of `yaml` on `cluster`.
fn apply(cluster: &Virtual, yaml: &str) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), yaml).unwrap();
    kubectl_apply(&cluster.kubeconfig_path, file.path());
}

/// cert-manager's ClusterIssuer kind and a CA issuer `name` over a fresh
/// CA, as an admin sets one up; its CA certificate.
fn ca_issuer(cluster: &Virtual, name: &str) -> String {
    use base64::Engine;
    let ca = wasmco_pki::new_ca(&format!("{name}-root")).unwrap();
    let encode = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // The kinds test-cert's clusters get from cert-manager, Istio and KNCC.
    let crds = crate::cli::repo().join("tests/emco-stand-ins/test-cert/crds.yaml");
    kubectl_apply(&cluster.kubeconfig_path, &crds);
    apply(
        cluster,
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}-ca, namespace: cert-manager}}\n\
             data: {{tls.crt: {}, tls.key: {}}}\n\
             ---\napiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {{name: {name}}}\n\
             spec: {{ca: {{secretName: {name}-ca}}}}\n",
            encode(&ca.certificate),
            encode(&ca.key)
        ),
    );
    ca.certificate
}

#[test]
fn ca_certs_refuse_what_they_cannot_do_and_keep_what_is_stored() {
    let hub = Virtual::start("hub");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    server.register_cluster("edge", "hub", &hub.kubeconfig);
    let certs = "/v2/cluster-providers/edge/ca-certs";

    // Bodies, by field; nothing is stored.
    let mut small_key = cert_spec("mesh");
    small_key["csrInfo"] = json!({"keySize": 1024});
    refused(
        server.post(certs, doc("mesh", small_key)),
        400,
        Some("spec.csrInfo.keySize"),
        "RSA takes",
    );
    let mut sgx = cert_spec("mesh");
    sgx["certificate"] = json!({"commonName": "tcs"});
    refused(
        server.post(certs, doc("mesh", sgx)),
        400,
        Some("spec.certificate"),
        "SGX",
    );
    let mut elsewhere = cert_spec("mesh");
    elsewhere["issuingCluster"]["cluster"] = json!("nowhere");
    let answer = server.post(certs, doc("mesh", elsewhere));
    assert!(
        matches!(answer.status().as_u16(), 404 | 422),
        "{:?}",
        answer.text()
    );
    expect(server.get(CERT), 404);

    expect(server.post(certs, doc("mesh", cert_spec("mesh"))), 201);
    // No group yet: nothing to sign for.
    refused(
        server.post(&format!("{CERT}/enrollment/instantiate"), json!({})),
        422,
        None,
        "names no cluster",
    );
    refused(
        server.post(
            &format!("{CERT}/clusters"),
            doc(
                "bad",
                json!({"scope": "everything", "clusterProvider": "edge"}),
            ),
        ),
        400,
        Some("spec.scope"),
        "",
    );
    expect(
        server.post(
            &format!("{CERT}/clusters"),
            doc(
                "all",
                json!({"scope": "name", "cluster": "hub", "clusterProvider": "edge"}),
            ),
        ),
        201,
    );
    // The issuer is not on the issuing cluster yet.
    refused(
        server.post(&format!("{CERT}/enrollment/instantiate"), json!({})),
        422,
        None,
        "ClusterIssuer mesh on issuing cluster edge+hub",
    );
    refused(
        server.post(&format!("{CERT}/distribution/instantiate"), json!({})),
        409,
        None,
        "instantiate it first",
    );
    let status = expect(server.get(&format!("{CERT}/enrollment/status")), 200);
    assert_eq!(status["deployedStatus"], "Created", "{status}");

    let root = ca_issuer(&hub, "mesh");
    let enrolled = expect(
        server.post(&format!("{CERT}/enrollment/instantiate"), json!({})),
        202,
    );
    assert_eq!(enrolled["deployedStatus"], "Instantiated", "{enrolled}");
    // What was signed from the caCert cannot change under it, nor go.
    let mut longer = cert_spec("mesh");
    longer["duration"] = json!("17520h");
    refused(
        server.put(CERT, doc("mesh", longer)),
        409,
        None,
        "terminated",
    );
    refused(server.delete(CERT), 409, None, "terminate it");
    expect(
        server.post(&format!("{CERT}/distribution/instantiate"), json!({})),
        202,
    );
    refused(
        server.post(&format!("{CERT}/enrollment/terminate"), json!({})),
        409,
        None,
        "terminate it before the enrollment",
    );
    // The hub got its CA, chained to the issuer's.
    let issuers = eventually(
        "the issuer and the hub's own",
        std::time::Duration::from_secs(30),
        || {
            let out = kubectl(
                &hub.kubeconfig_path,
                &["get", "clusterissuers", "-o", "json"],
            );
            let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let items = list["items"].as_array().cloned().unwrap_or_default();
            if items.len() == 2 {
                Ok(items)
            } else {
                Err(format!("{items:?}"))
            }
        },
    );
    assert_eq!(
        issuers.len(),
        2,
        "the issuer and the hub's own: {issuers:?}"
    );
    let out = kubectl(
        &hub.kubeconfig_path,
        &["get", "secrets", "-n", "cert-manager", "-o", "json"],
    );
    let secrets: Value = serde_json::from_slice(&out.stdout).unwrap();
    let own = secrets["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["metadata"]["name"]
                .as_str()
                .unwrap()
                .ends_with("-mesh-edge-hub-ca")
        })
        .unwrap_or_else(|| panic!("{secrets}"));
    use base64::Engine;
    let chain = base64::engine::general_purpose::STANDARD
        .decode(own["data"]["tls.crt"].as_str().unwrap())
        .unwrap();
    assert!(
        String::from_utf8(chain).unwrap().ends_with(&root),
        "the issuer's CA follows"
    );

    // A project's caCert is the admin's to enroll, even in its project.
    expect(server.post("/v2/projects", doc("shop", json!({}))), 201);
    expect(
        server.post("/v2/projects/shop/ca-certs", doc("mine", cert_spec("mesh"))),
        201,
    );
    let token = issue_token(&server, "shop-editor", &["shop"], "editor", "1h");
    let tenant = server.as_holder(&token);
    refused(
        tenant.post(
            "/v2/projects/shop/ca-certs/mine/enrollment/instantiate",
            json!({}),
        ),
        422,
        None,
        "only the admin",
    );

    // Terminated, it can go, with its contexts.
    expect(
        server.post(&format!("{CERT}/distribution/terminate"), json!({})),
        202,
    );
    expect(
        server.post(&format!("{CERT}/enrollment/terminate"), json!({})),
        202,
    );
    expect(server.delete(&format!("{CERT}/clusters/all")), 204);
    expect(server.delete(CERT), 204);
    expect(server.get(&format!("{CERT}/enrollment/status")), 404);
}
