//! Every (method, path) the API serves, as the router builds them.

use wasmco_core::Kind;

use crate::{ca_certs, clusters, deployments, logical_clouds, pki};

/// Every (method, path) the API serves, in OpenAPI path syntax.
pub fn operations() -> Vec<(&'static str, String)> {
    let mut ops = vec![
        ("get", "/healthz".to_owned()),
        ("get", "/v2/openapi.json".to_owned()),
        ("get", "/v2/hosts".to_owned()),
        ("get", "/v2/overview".to_owned()),
        ("get", "/v2/gitops".to_owned()),
        ("get", "/v2/tokens".to_owned()),
        ("post", "/v2/tokens".to_owned()),
        ("get", "/v2/tokens/{token}".to_owned()),
        ("delete", "/v2/tokens/{token}".to_owned()),
    ];
    for kind in Kind::ALL.into_iter().filter(|k| !k.is_declared()) {
        ops.push(("get", kind.collection_route()));
        ops.push(("post", kind.collection_route()));
        ops.push(("get", kind.item_route()));
        ops.push(("put", kind.item_route()));
        ops.push(("delete", kind.item_route()));
    }
    let dig = Kind::DeploymentIntentGroup.item_route();
    for action in deployments::DigAction::ALL {
        ops.push(("post", format!("{dig}/{}", action.route())));
    }
    ops.push(("get", format!("{dig}/context")));
    ops.push(("get", format!("{dig}/status")));
    let lc = Kind::LogicalCloud.item_route();
    for action in logical_clouds::CloudAction::ALL {
        ops.push(("post", format!("{lc}/{}", action.route())));
    }
    ops.push(("get", format!("{lc}/status")));
    for cert in [Kind::CaCert, Kind::ProjectCaCert] {
        for stage in ca_certs::STAGES {
            let stage_route = format!("{}/{}", cert.item_route(), stage.route());
            for action in ca_certs::CertAction::ALL {
                ops.push(("post", format!("{stage_route}/{}", action.route())));
            }
            ops.push(("get", format!("{stage_route}/status")));
        }
    }
    ops.push((
        "get",
        format!(
            "{}/kubeconfig",
            Kind::LogicalCloudClusterReference.item_route()
        ),
    ));
    let cluster = Kind::Cluster.item_route();
    for (method, route) in pki::ROUTES {
        ops.push((method, format!("{cluster}/{route}")));
    }
    ops.push(("get", format!("{cluster}/{}", clusters::STATUS_ROUTE)));
    for action in clusters::NetworkAction::ALL {
        ops.push(("post", format!("{cluster}/{}", action.route())));
    }
    ops
}
