//! The generic placement intent document, as EMCO writes it.

use serde::Deserialize;

/// What the host sends: every app intent of the DIG's generic placement intents.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GenericPlacementIntent {
    #[serde(default)]
    pub app_intents: Vec<AppIntent>,
}

/// One app's placement.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppIntent {
    pub app: String,
    pub intent: AppPlacementIntent,
}

/// EMCO's `allOf` / `anyOf` lists.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppPlacementIntent {
    #[serde(default)]
    pub all_of: Vec<PlacementEntry>,
    #[serde(default)]
    pub any_of: Vec<PlacementEntry>,
}

/// An entry of `allOf` or `anyOf`: a cluster selector or a nested `anyOf`.
#[derive(Debug)]
pub enum PlacementEntry {
    Cluster(ClusterSelector),
    AnyOf { any_of: Vec<ClusterSelector> },
}

/// One provider's cluster, by name or by label (never both).
#[derive(Debug, Clone)]
pub struct ClusterSelector {
    pub provider: String,
    pub cluster: Option<String>,
    pub label: Option<String>,
}

impl ClusterSelector {
    /// A short description for error messages.
    pub fn describe(&self) -> String {
        match (&self.cluster, &self.label) {
            (Some(name), _) => format!("cluster {}/{name}", self.provider),
            (None, Some(label)) => format!("label {label:?} of provider {}", self.provider),
            (None, None) => format!("provider {}", self.provider),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawEntry {
    cluster_provider: Option<String>,
    cluster: Option<String>,
    cluster_label: Option<String>,
    any_of: Option<Vec<RawEntry>>,
}

impl RawEntry {
    fn into_selector(self) -> Result<ClusterSelector, String> {
        if self.any_of.is_some() {
            return Err("an anyOf entry may not nest another anyOf".into());
        }
        let provider = self
            .cluster_provider
            .filter(|p| !p.is_empty())
            .ok_or("entry needs clusterProvider")?;
        match (&self.cluster, &self.cluster_label) {
            (Some(_), Some(_)) => Err(format!(
                "entry for provider {provider} names both cluster and clusterLabel; name one"
            )),
            (None, None) => Err(format!(
                "entry for provider {provider} names neither cluster nor clusterLabel"
            )),
            _ => Ok(ClusterSelector {
                provider,
                cluster: self.cluster,
                label: self.cluster_label,
            }),
        }
    }
}

impl<'de> Deserialize<'de> for PlacementEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawEntry::deserialize(deserializer)?;
        let entry = match raw.any_of {
            Some(nested) => {
                if raw.cluster_provider.is_some()
                    || raw.cluster.is_some()
                    || raw.cluster_label.is_some()
                {
                    return Err(serde::de::Error::custom(
                        "an entry holds either anyOf or a cluster selector, not both",
                    ));
                }
                let any_of = nested
                    .into_iter()
                    .map(RawEntry::into_selector)
                    .collect::<Result<_, _>>()
                    .map_err(serde::de::Error::custom)?;
                PlacementEntry::AnyOf { any_of }
            }
            None => PlacementEntry::Cluster(raw.into_selector().map_err(serde::de::Error::custom)?),
        };
        Ok(entry)
    }
}
