//! gac's own intent document (see `legacy`).

use serde::Deserialize;

/// Resources to add and customisations to make.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GacIntent {
    #[serde(default)]
    pub(crate) resources: Vec<AddedResource>,
    #[serde(default)]
    pub(crate) customizations: Vec<Customization>,
}

/// A new Kubernetes object for an app.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AddedResource {
    pub(crate) app: String,
    pub(crate) manifest: serde_json::Value,
    #[serde(default, deserialize_with = "cluster_specific")]
    pub(crate) cluster_info: Option<ClusterInfo>,
    #[serde(default)]
    pub(crate) cluster_specific: Option<serde_json::Value>,
}

/// A patch to one of an app's resources.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Customization {
    pub(crate) app: String,
    pub(crate) target: Target,
    pub(crate) patch_type: PatchType,
    pub(crate) patch: serde_json::Value,
    #[serde(default, deserialize_with = "cluster_specific")]
    pub(crate) cluster_info: Option<ClusterInfo>,
    #[serde(default)]
    pub(crate) cluster_specific: Option<serde_json::Value>,
}

/// The resource a customisation changes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    pub(crate) kind: String,
    pub(crate) name: String,
}

/// EMCO's patch types.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PatchType {
    Json,
    Merge,
}

/// EMCO's `clusterInfo`: which clusters a cluster-specific edit is for.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ClusterInfo {
    pub(crate) scope: Scope,
    pub(crate) cluster_provider: String,
    #[serde(default)]
    pub(crate) cluster: Option<String>,
    #[serde(default)]
    pub(crate) cluster_label: Option<String>,
    #[serde(default)]
    pub(crate) mode: Mode,
}

/// Select clusters by name or by label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scope {
    Name,
    Label,
}

/// Whether the selected clusters get the edit, or all the others do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    #[default]
    Allow,
    Deny,
}

fn cluster_specific<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ClusterInfo>, D::Error> {
    let info = Option::<ClusterInfo>::deserialize(deserializer)?;
    if let Some(info) = &info {
        let wanted = match info.scope {
            Scope::Name => info.cluster.is_some(),
            Scope::Label => info.cluster_label.is_some(),
        };
        if !wanted {
            return Err(serde::de::Error::custom(match info.scope {
                Scope::Name => "clusterInfo with scope name needs cluster",
                Scope::Label => "clusterInfo with scope label needs clusterLabel",
            }));
        }
    }
    Ok(info)
}

/// The clusters an edit is limited to: EMCO writes `clusterSpecific` as a
/// boolean or as the string `"true"`/`"false"`; `false` ignores `clusterInfo`.
pub(crate) fn selection<'a>(
    cluster_info: &'a Option<ClusterInfo>,
    cluster_specific: &Option<serde_json::Value>,
) -> Option<&'a ClusterInfo> {
    let specific = match cluster_specific {
        None => true,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => !s.eq_ignore_ascii_case("false"),
        Some(_) => true,
    };
    cluster_info.as_ref().filter(|_| specific)
}
