//! A caCert's enrollment and distribution stages.

use serde_json::{Value, json};

use wasmco_core::Kind;
use wasmco_core::wire::{DeploymentState, DeploymentStatus};

use super::parts::{error_responses, merge, parameters, status_query};
use super::wire;

/// A caCert's enrollment and distribution, for a provider's and a project's.
pub(super) fn document_ca_certs(paths: &mut serde_json::Map<String, Value>) {
    use crate::ca_certs::CertAction;
    use wasmco_orchestrator::CertStage;
    let errors = error_responses();
    for cert in [Kind::CaCert, Kind::ProjectCaCert] {
        for stage in crate::ca_certs::STAGES {
            let stage_route = format!("{}/{}", cert.item_route(), stage.route());
            for action in CertAction::ALL {
                let route = format!("{stage_route}/{}", action.route());
                let summary = match (stage, action) {
                    (CertStage::Enrollment, CertAction::Instantiate) => {
                        "sign each selected cluster's CA certificate with the issuer's CA, read from the issuing cluster"
                    }
                    (CertStage::Distribution, CertAction::Instantiate) => {
                        "put each cluster's CA on it: a Secret, a ClusterIssuer, KNCC's ConfigCtrl for Istio and (a project's) a ProxyConfig per logical cloud namespace"
                    }
                    (CertStage::Enrollment, CertAction::Terminate) => {
                        "forget the signed keys (after the distribution is terminated)"
                    }
                    (CertStage::Distribution, CertAction::Terminate) => {
                        "remove what the distribution put on the clusters"
                    }
                    (CertStage::Enrollment, CertAction::Update) => {
                        "sign anew for the clusters the groups select now"
                    }
                    (CertStage::Distribution, CertAction::Update) => {
                        "make the clusters hold what the enrollment signed last"
                    }
                };
                paths.insert(route.clone(), json!({"post": {
                    "summary": summary,
                    "parameters": parameters(&route),
                    "responses": {"202": wire::answers::<DeploymentState>("done; the stage's state"), "404": errors["404"],
                                  "409": merge(&errors["409"], "its state (or the other stage's) does not allow this action"),
                                  "422": merge(&errors["422"], "no cluster selected, an issuer that cannot sign, or a project's token")}}}));
            }
            let route = format!("{stage_route}/status");
            let mut params = parameters(&route);
            params.extend(status_query());
            paths.insert(
                route.clone(),
                json!({"get": {
                "summary": "what rsync did with the stage, in a DIG status's shape",
                "parameters": params,
                "responses": {"200": wire::answers::<DeploymentStatus>("the status"), "404": errors["404"]}}}),
            );
        }
    }
}
