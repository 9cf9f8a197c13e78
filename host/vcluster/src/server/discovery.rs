//! Discovery: `/version`, `/api`, `/apis` and the resource lists of each
//! group version, from the types the cluster serves now.

use serde_json::{Value, json};

use super::shared::Shared;
use crate::catalog::ResourceType;

/// What a discovery path answers; `None` for any other path.
pub(super) fn discovery(shared: &Shared, segments: &[&str]) -> Option<Value> {
    let objects = shared.objects();
    let resources = |group: &str, version: &str| {
        let list: Vec<Value> = objects
            .types()
            .iter()
            .filter(|t| t.group == group && t.version == version)
            .map(ResourceType::discovery)
            .collect();
        let group_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        (!list.is_empty()).then(|| json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list}))
    };
    let group_entry = |group: &str| {
        let versions: Vec<Value> = objects
            .types()
            .iter()
            .filter(|t| t.group == group)
            .map(|t| t.version.clone())
            .fold(Vec::<String>::new(), |mut seen, v| {
                if !seen.contains(&v) {
                    seen.push(v);
                }
                seen
            })
            .into_iter()
            .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
            .collect();
        let preferred = versions.first().cloned()?;
        Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
    };
    match segments {
        ["version"] => Some(
            json!({"major": "1", "minor": "31", "gitVersion": "v1.31.0-wasmco", "platform": "linux/amd64"}),
        ),
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.address()}]})),
        ["api", "v1"] => resources("", "v1"),
        ["apis"] => {
            let mut groups: Vec<&str> = objects
                .types()
                .iter()
                .map(|t| t.group.as_str())
                .filter(|g| !g.is_empty())
                .collect();
            groups.sort_unstable();
            groups.dedup();
            let groups: Vec<Value> = groups.into_iter().filter_map(group_entry).collect();
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["apis", group] => group_entry(group).map(|mut g| {
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        }),
        ["apis", group, version] => resources(group, version),
        _ => None,
    }
}
