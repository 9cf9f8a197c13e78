//! EMCO's network intents end to end: a cluster's networks and provider
//! networks, given in EMCO's bodies, applied by rsync as ovn4nfv's objects
//! on a virtual cluster that serves their CRDs, with status, stop and
//! terminate.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::server::{Server, Virtual, doc, expect, refused};
use crate::support::wait::wait_until;

const CLUSTER: &str = "/v2/cluster-providers/edge/clusters/east";

/// ovn4nfv's and Multus's CRDs, as a cluster running them has.
fn install_network_crds(cluster: &Virtual) {
    let crd = |group: &str, kind: &str, plural: &str, scope: &str| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": scope,
                "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase()},
                "versions": [{"name": if group == "k8s.cni.cncf.io" { "v1" } else { "v1alpha1" },
                    "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
    };
    for body in [
        crd("k8s.plugin.opnfv.org", "Network", "networks", "Cluster"),
        crd(
            "k8s.plugin.opnfv.org",
            "ProviderNetwork",
            "providernetworks",
            "Cluster",
        ),
        crd(
            "k8s.cni.cncf.io",
            "NetworkAttachmentDefinition",
            "network-attachment-definitions",
            "Namespaced",
        ),
    ] {
        let response = reqwest::blocking::Client::new()
            .post(format!(
                "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                cluster.base
            ))
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(response.status(), 201, "{}", response.text().unwrap());
    }
}

/// How long the cluster may take to get where a step sends it.
const PATIENCE: Duration = Duration::from_secs(30);

const NETWORK: &str = "/apis/k8s.plugin.opnfv.org/v1alpha1/networks/protected-private-net";
const PROVIDER_NETWORK: &str =
    "/apis/k8s.plugin.opnfv.org/v1alpha1/providernetworks/emco-private-net";
const ATTACHMENT: &str = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions/protected-private-net";

#[test]
fn a_clusters_network_intents_are_applied_with_status_and_terminated() {
    let cluster = Virtual::start("east");
    install_network_crds(&cluster);
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    expect(
        server.post("/v2/cluster-providers", doc("edge", json!({}))),
        201,
    );
    server.register_cluster("edge", "east", &cluster.kubeconfig);

    // EMCO's bodies, as its vFW example posts them.
    let network = json!({"cniType": "ovn4nfv", "ipv4Subnets": [
        {"subnet": "192.168.10.0/24", "name": "subnet1", "gateway": "192.168.10.1/24"}]});
    expect(
        server.post(
            &format!("{CLUSTER}/networks"),
            doc("protected-private-net", network.clone()),
        ),
        201,
    );
    let provider_network = json!({"cniType": "ovn4nfv", "providerNetType": "VLAN",
        "ipv4Subnets": [{"subnet": "10.10.20.0/24", "name": "subnet1", "gateway": "10.10.20.1/24",
                         "excludeIps": "10.10.20.2..10.10.20.9"}],
        "vlan": {"vlanID": "100", "providerInterfaceName": "eth1", "logicalInterfaceName": "eth1.100",
                 "vlanNodeSelector": "specific", "nodeLabelList": ["kubernetes.io/hostname=localhost"]}});
    expect(
        server.post(
            &format!("{CLUSTER}/provider-networks"),
            doc("emco-private-net", provider_network.clone()),
        ),
        201,
    );
    let mut bad = provider_network.clone();
    bad["vlan"]["vlanNodeSelector"] = json!("some");
    refused(
        server.post(&format!("{CLUSTER}/provider-networks"), doc("bad", bad)),
        400,
        Some("spec.vlan.vlanNodeSelector"),
        "any or specific",
    );
    let mut bad = network;
    bad["ipv4Subnets"][0]["gateway"] = json!("192.168.10.1");
    refused(
        server.post(&format!("{CLUSTER}/networks"), doc("bad", bad)),
        400,
        Some("spec.ipv4Subnets[0].gateway"),
        "CIDR",
    );
    // Nothing applied yet: terminate and stop have nothing to act on.
    refused(
        server.post(&format!("{CLUSTER}/terminate"), json!({})),
        409,
        None,
        "Created",
    );

    let state = expect(server.post(&format!("{CLUSTER}/apply"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "Instantiated", "{state}");
    assert_eq!(state["name"], "edge+east");
    wait_until("the network objects on the cluster", PATIENCE, || {
        [NETWORK, PROVIDER_NETWORK, ATTACHMENT]
            .iter()
            .all(|path| cluster.object(path).is_some())
    });
    let network = cluster.object(NETWORK).unwrap();
    assert_eq!(
        network["metadata"]["labels"]["net"],
        "protected-private-net"
    );
    assert_eq!(network["spec"]["cniType"], "ovn4nfv");
    assert_eq!(
        network["spec"]["ipv4Subnets"][0]["subnet"],
        "192.168.10.0/24"
    );
    let provider = cluster.object(PROVIDER_NETWORK).unwrap();
    assert_eq!(provider["spec"]["vlan"]["vlanId"], "100", "{provider}");
    assert_eq!(provider["spec"]["providerNetType"], "VLAN");
    let attachment = cluster.object(ATTACHMENT).unwrap();
    let config: Value =
        serde_json::from_str(attachment["spec"]["config"].as_str().unwrap()).unwrap();
    assert_eq!(config["nfn-network"], "protected-private-net");

    wait_until("the status says all four are applied", PATIENCE, || {
        let status = expect(server.get(&format!("{CLUSTER}/status")), 200);
        status["deployedCounts"] == json!({"Applied": 4})
    });
    let status = expect(server.get(&format!("{CLUSTER}/status?status=ready")), 200);
    assert_eq!(status["apps"][0]["name"], "network-intents", "{status}");
    assert!(
        ["Reachable", "Unknown"].contains(&status["state"].as_str().unwrap()),
        "{status}"
    );

    // A cluster whose networks are applied stays until they are terminated.
    refused(server.delete(CLUSTER), 409, None, "terminate them");
    // A network dropped and applied again goes from the cluster.
    assert_eq!(
        server
            .delete(&format!("{CLUSTER}/provider-networks/emco-private-net"))
            .status(),
        204
    );
    let state = expect(server.post(&format!("{CLUSTER}/apply"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "Updated", "{state}");
    wait_until("the provider network removed", PATIENCE, || {
        cluster.object(PROVIDER_NETWORK).is_none()
    });
    assert!(cluster.object(NETWORK).is_some());

    let state = expect(server.post(&format!("{CLUSTER}/terminate"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "Terminated", "{state}");
    wait_until("the network objects removed", PATIENCE, || {
        cluster.object(NETWORK).is_none() && cluster.object(ATTACHMENT).is_none()
    });
    let state = expect(server.post(&format!("{CLUSTER}/stop"), json!({})), 202);
    assert_eq!(state["deployedStatus"], "TerminateStopped", "{state}");
    assert_eq!(server.delete(CLUSTER).status(), 204);
    refused(
        server.post("/v2/cluster-providers/edge/clusters/west/apply", json!({})),
        404,
        None,
        "west",
    );
}
