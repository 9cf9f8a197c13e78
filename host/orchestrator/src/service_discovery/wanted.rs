//! What a DIG asks to make known: read from the traffic group intents its
//! dtc controller is handed, when its context is built.

use serde_json::Value;

use wasmco_store::appcontext::ServiceMirror;

/// The segments of the intents it reads: a traffic group's inbound
/// intents and their clients.
const TRAFFIC_GROUPS: &str = "traffic-group-intents";
const INBOUND: &str = "inbound-intents";
const CLIENTS: &str = "clients";

/// The services to make known, from the intent trees handed to the
/// deployment's action controllers: every inbound intent of a traffic
/// group that names its app and `serviceName` and has clients that name
/// theirs (EMCO's sds skips the others too).
pub(crate) fn mirrors_in<'a>(trees: impl Iterator<Item = &'a str>) -> Vec<ServiceMirror> {
    let mut mirrors = Vec::new();
    // Most controllers are handed no traffic group: no need to parse theirs.
    for tree in trees.filter(|tree| tree.contains(TRAFFIC_GROUPS)) {
        let Ok(tree) = serde_json::from_str::<Value>(tree) else {
            continue;
        };
        let groups = tree["intents"].as_array().into_iter().flatten();
        for group in groups.filter(|g| g["kind"] == TRAFFIC_GROUPS) {
            for inbound in children(group, INBOUND) {
                let (Some(server_app), Some(service)) = (
                    text(&inbound["spec"]["app"]),
                    text(&inbound["spec"]["serviceName"]),
                ) else {
                    continue;
                };
                let mut client_apps: Vec<String> = children(inbound, CLIENTS)
                    .filter_map(|client| text(&client["spec"]["app"]))
                    .map(str::to_owned)
                    .collect();
                client_apps.sort();
                client_apps.dedup();
                if client_apps.is_empty() {
                    continue;
                }
                mirrors.push(ServiceMirror {
                    origin: format!(
                        "inbound intent {} of traffic group intent {}",
                        inbound["metadata"]["name"].as_str().unwrap_or_default(),
                        group["metadata"]["name"].as_str().unwrap_or_default()
                    ),
                    server_app: server_app.to_owned(),
                    service: service.to_owned(),
                    client_apps,
                });
            }
        }
    }
    mirrors
}

fn children<'a>(node: &'a Value, segment: &str) -> impl Iterator<Item = &'a Value> {
    node["children"][segment].as_array().into_iter().flatten()
}

pub(super) fn text(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tree(inbound: Value) -> String {
        json!({"name": "testdtc", "intents": [{
            "kind": "traffic-group-intents", "metadata": {"name": "testdtc"}, "spec": {},
            "children": {"inbound-intents": [inbound]},
        }]})
        .to_string()
    }

    #[test]
    fn an_inbound_intent_with_clients_asks_for_its_service_once_per_client_app() {
        let trees = [tree(json!({
            "kind": "inbound-intents", "metadata": {"name": "serverin"},
            "spec": {"app": "http-server", "serviceName": "http-service"},
            "children": {"clients": [
                {"metadata": {"name": "a"}, "spec": {"app": "http-client"}},
                {"metadata": {"name": "b"}, "spec": {"app": "http-client"}},
            ]},
        }))];
        let mirrors = mirrors_in(trees.iter().map(String::as_str));
        assert_eq!(
            mirrors,
            [ServiceMirror {
                origin: "inbound intent serverin of traffic group intent testdtc".into(),
                server_app: "http-server".into(),
                service: "http-service".into(),
                client_apps: vec!["http-client".into()],
            }]
        );
    }

    #[test]
    fn without_a_service_name_or_clients_nothing_is_asked() {
        let trees = [
            tree(json!({"metadata": {"name": "s"}, "spec": {"app": "server"},
                        "children": {"clients": [{"spec": {"app": "client"}}]}})),
            tree(
                json!({"metadata": {"name": "s"}, "spec": {"app": "server", "serviceName": "svc"},
                        "children": {}}),
            ),
            tree(
                json!({"metadata": {"name": "s"}, "spec": {"app": "server", "serviceName": "svc"},
                        "children": {"clients": [{"spec": {"app": ""}}]}}),
            ),
        ];
        assert!(mirrors_in(trees.iter().map(String::as_str)).is_empty());
    }
}
