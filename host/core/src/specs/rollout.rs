//! A DIG's rollout intent: its instantiates and updates go a group of
//! clusters at a time, each group Ready before the next, stopping when
//! too many fail.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checking::{Scope, Spec};
use crate::document::{FieldError, Reference, check_name};
use crate::resource::{ClusterInfo, ClusterRef};

/// The key of a DIG intent that names its rollout intent.
pub const ROLLOUT_KEY: &str = "rolloutIntent";

/// The most groups a rollout is cut into.
const MOST_GROUPS: u32 = 1000;

/// The longest wait taken (a pause, a group's timeout): a week.
const LONGEST_SECONDS: u64 = 7 * 24 * 3600;

/// How the clusters are grouped: exactly one of the fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RolloutGroups {
    /// This many groups of (nearly) equal size, clusters in name order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Groups of this many clusters, in name order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Cumulative shares: `[10, 50, 100]` is the first 10% of the clusters,
    /// then up to half, then the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentages: Option<Vec<u32>>,
    /// One group per label, in this order, of the clusters carrying it
    /// (and no earlier one); the clusters carrying none go last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_label: Option<Vec<String>>,
}

/// A gate controller a rollout asks between groups, with its intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateRef {
    /// The stored controller (of type `gate`).
    pub controller: String,
    /// What it is handed as its intent, as JSON.
    #[serde(default = "empty_object")]
    pub intent: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// A number of clusters (`2`), or a share of the clusters released so far
/// (`"25%"`, rounded down as Kubernetes rounds `maxUnavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AllowanceText", into = "AllowanceText")]
pub enum Allowance {
    /// That many clusters.
    Count(u32),
    /// That percentage of them, from 0 to 100.
    Percent(u32),
}

impl Default for Allowance {
    fn default() -> Self {
        Allowance::Count(0)
    }
}

impl Allowance {
    /// How many of `clusters` it allows.
    pub fn of(self, clusters: usize) -> usize {
        match self {
            Allowance::Count(count) => usize::try_from(count).unwrap_or(usize::MAX),
            Allowance::Percent(percent) => {
                clusters.saturating_mul(usize::try_from(percent).unwrap_or(100)) / 100
            }
        }
    }

    /// As a person reads it, out of `clusters`: `2`, or `25% (3 of 12)`.
    pub fn describe(self, clusters: usize) -> String {
        match self {
            Allowance::Count(count) => count.to_string(),
            Allowance::Percent(percent) => {
                format!("{percent}% ({} of {clusters})", self.of(clusters))
            }
        }
    }
}

/// An [`Allowance`] as written: a number, or a percentage in a string.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum AllowanceText {
    Count(u32),
    Percent(#[schemars(regex(pattern = r"^(100|[1-9]?[0-9])%$"))] String),
}

impl TryFrom<AllowanceText> for Allowance {
    type Error = String;

    fn try_from(text: AllowanceText) -> Result<Self, Self::Error> {
        match text {
            AllowanceText::Count(count) => Ok(Allowance::Count(count)),
            AllowanceText::Percent(share) => share
                .strip_suffix('%')
                .and_then(|number| number.parse::<u32>().ok())
                .filter(|percent| *percent <= 100)
                .map(Allowance::Percent)
                .ok_or_else(|| {
                    format!(
                        "`{share}` is neither a count nor a percentage from 0% to 100% (\"25%\")"
                    )
                }),
        }
    }
}

impl From<Allowance> for AllowanceText {
    fn from(allowance: Allowance) -> Self {
        match allowance {
            Allowance::Count(count) => AllowanceText::Count(count),
            Allowance::Percent(percent) => AllowanceText::Percent(format!("{percent}%")),
        }
    }
}

impl JsonSchema for Allowance {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Allowance".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        AllowanceText::json_schema(generator)
    }
}

/// The order the clusters are cut into groups in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterOrder {
    /// By provider and name.
    #[default]
    Name,
    /// As the placement controllers left them: the first app's clusters
    /// in its placement's order, then those only later apps use. A
    /// placement controller that ranks clusters decides which go first.
    Placement,
}

/// A rollout intent's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RolloutIntentSpec {
    /// How the DIG's clusters are grouped.
    pub groups: RolloutGroups,
    /// The order they are grouped in.
    #[serde(default)]
    pub order: ClusterOrder,
    /// How many clusters of the groups released so far may fail (a
    /// resource Failed, or not Ready within the group's timeout) before
    /// the rollout stops.
    #[serde(default)]
    pub max_failures: Allowance,
    /// How many clusters of the groups released so far may be
    /// unreachable before the rollout stops.
    #[serde(default)]
    pub max_unavailable: Allowance,
    /// How long to wait after a group is Ready before the next goes.
    #[serde(default)]
    pub pause_seconds: u64,
    /// How long a group has to be Ready; its clusters that are not by
    /// then count as failed.
    #[serde(default = "default_group_timeout")]
    pub group_timeout_seconds: u64,
    /// Gate controllers asked, in order, once a group is Ready and the
    /// pause passed: the next group goes when every one proceeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<GateRef>,
}

fn default_group_timeout() -> u64 {
    600
}

impl Spec for RolloutIntentSpec {
    fn check(self, _: &Scope<'_>) -> Result<Vec<Reference>, FieldError> {
        let RolloutGroups {
            count,
            size,
            percentages,
            by_label,
        } = &self.groups;
        let given = [
            count.is_some(),
            size.is_some(),
            percentages.is_some(),
            by_label.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(FieldError::new(
                "spec.groups",
                "give exactly one of count, size, percentages, byLabel",
            ));
        }
        if count.is_some_and(|c| c == 0 || c > MOST_GROUPS) {
            return Err(FieldError::new(
                "spec.groups.count",
                format!("must be from 1 to {MOST_GROUPS}"),
            ));
        }
        if size == &Some(0) {
            return Err(FieldError::new("spec.groups.size", "must be at least 1"));
        }
        if let Some(shares) = percentages {
            let rising = shares.windows(2).all(|w| w[0] < w[1]);
            if shares.is_empty() || !rising || shares[0] == 0 || shares.last() != Some(&100) {
                return Err(FieldError::new(
                    "spec.groups.percentages",
                    "must rise from above 0 and end at 100",
                ));
            }
        }
        if let Some(labels) = by_label {
            if labels.is_empty() {
                return Err(FieldError::new("spec.groups.byLabel", "names no label"));
            }
            for (i, label) in labels.iter().enumerate() {
                check_name(&format!("spec.groups.byLabel[{i}]"), label)?;
            }
        }
        for (field, seconds) in [
            ("spec.pauseSeconds", self.pause_seconds),
            ("spec.groupTimeoutSeconds", self.group_timeout_seconds),
        ] {
            if seconds > LONGEST_SECONDS {
                return Err(FieldError::new(
                    field,
                    format!("must be at most {LONGEST_SECONDS}"),
                ));
            }
        }
        let mut refs = Vec::new();
        for (i, gate) in self.gates.iter().enumerate() {
            let field = format!("spec.gates[{i}].controller");
            check_name(&field, &gate.controller)?;
            refs.push(Reference {
                field,
                kind: crate::kinds::Kind::Controller,
                path: vec![gate.controller.clone()],
            });
        }
        if self.group_timeout_seconds == 0 {
            return Err(FieldError::new(
                "spec.groupTimeoutSeconds",
                "must be at least 1",
            ));
        }
        Ok(refs)
    }
}

impl RolloutIntentSpec {
    /// The groups `placed` (the clusters a revision puts apps on, in
    /// placement order) go in, in order; `leaving` (clusters only the
    /// previous revision used, whose apps are removed) join the last. No
    /// group is empty.
    pub fn plan(&self, placed: &[&ClusterInfo], leaving: &[ClusterRef]) -> Vec<Vec<ClusterRef>> {
        let mut sorted: Vec<&ClusterInfo> = placed.to_vec();
        if self.order == ClusterOrder::Name {
            sorted.sort_by_key(|c| c.reference());
        }
        let total = sorted.len();
        let refs = |infos: &[&ClusterInfo]| infos.iter().map(|c| c.reference()).collect();
        let mut groups: Vec<Vec<ClusterRef>> = match &self.groups {
            RolloutGroups { count: Some(n), .. } => {
                let n = (*n as usize).clamp(1, total.max(1));
                // The first `total % n` groups take one more.
                let (base, more) = (total / n, total % n);
                let mut start = 0;
                (0..n)
                    .map(|i| {
                        let len = base + usize::from(i < more);
                        let group = refs(&sorted[start..start + len]);
                        start += len;
                        group
                    })
                    .collect()
            }
            RolloutGroups { size: Some(n), .. } => {
                sorted.chunks((*n as usize).max(1)).map(refs).collect()
            }
            RolloutGroups {
                percentages: Some(shares),
                ..
            } => {
                let mut start = 0;
                shares
                    .iter()
                    .map(|share| {
                        let end = (total * *share as usize).div_ceil(100).clamp(start, total);
                        let group = refs(&sorted[start..end]);
                        start = end;
                        group
                    })
                    .collect()
            }
            RolloutGroups {
                by_label: Some(labels),
                ..
            } => {
                let mut taken = BTreeSet::new();
                let mut groups: Vec<Vec<ClusterRef>> = labels
                    .iter()
                    .map(|label| {
                        let group: Vec<ClusterRef> = sorted
                            .iter()
                            .filter(|c| c.labels.contains(label))
                            .map(|c| c.reference())
                            .filter(|c| !taken.contains(c))
                            .collect();
                        taken.extend(group.iter().cloned());
                        group
                    })
                    .collect();
                groups.push(
                    sorted
                        .iter()
                        .map(|c| c.reference())
                        .filter(|c| !taken.contains(c))
                        .collect(),
                );
                groups
            }
            RolloutGroups { .. } => vec![refs(&sorted)],
        };
        groups.retain(|g| !g.is_empty());
        match groups.last_mut() {
            Some(last) => last.extend(leaving.iter().cloned()),
            None if !leaving.is_empty() => groups.push(leaving.to_vec()),
            None => {}
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters(n: usize) -> Vec<ClusterInfo> {
        (0..n)
            .map(|i| ClusterInfo {
                provider: "p".into(),
                name: format!("c{i:02}"),
                labels: if i % 4 == 0 {
                    vec!["canary".into()]
                } else {
                    Vec::new()
                },
                kv: Vec::new(),
            })
            .collect()
    }

    fn spec(groups: RolloutGroups) -> RolloutIntentSpec {
        RolloutIntentSpec {
            groups,
            order: ClusterOrder::Name,
            max_failures: Allowance::default(),
            max_unavailable: Allowance::default(),
            pause_seconds: 0,
            group_timeout_seconds: 60,
            gates: Vec::new(),
        }
    }

    #[test]
    fn placement_order_keeps_the_order_placement_left() {
        let infos = clusters(6);
        let ranked: Vec<&ClusterInfo> = [4, 1, 5, 0, 2, 3].iter().map(|&i| &infos[i]).collect();
        let mut by_rank = spec(RolloutGroups {
            size: Some(2),
            ..RolloutGroups::default()
        });
        let names = |groups: Vec<Vec<ClusterRef>>| -> Vec<Vec<String>> {
            groups
                .into_iter()
                .map(|g| g.into_iter().map(|c| c.cluster).collect())
                .collect()
        };
        assert_eq!(
            names(by_rank.plan(&ranked, &[]))[0],
            ["c00", "c01"],
            "by name unless asked"
        );
        by_rank.order = ClusterOrder::Placement;
        assert_eq!(
            names(by_rank.plan(&ranked, &[])),
            [["c04", "c01"], ["c05", "c00"], ["c02", "c03"]]
        );
    }

    #[test]
    fn an_allowance_is_a_count_or_a_share_of_the_released_clusters() {
        let read = |value: serde_json::Value| {
            serde_json::from_value::<RolloutIntentSpec>(serde_json::json!({
                "groups": {"count": 2}, "maxUnavailable": value}))
            .map(|spec| spec.max_unavailable)
        };
        assert_eq!(read(serde_json::json!(3)).unwrap(), Allowance::Count(3));
        let quarter = read(serde_json::json!("25%")).unwrap();
        assert_eq!(quarter, Allowance::Percent(25));
        assert_eq!((quarter.of(12), quarter.of(3)), (3, 0));
        assert_eq!(quarter.describe(12), "25% (3 of 12)");
        for bad in ["150%", "25", "a%", "-1%"] {
            let error = read(serde_json::json!(bad)).unwrap_err().to_string();
            assert!(
                error.contains("percentage from 0% to 100%"),
                "{bad}: {error}"
            );
        }
        let written = serde_json::to_value(Allowance::Percent(10)).unwrap();
        assert_eq!(written, serde_json::json!("10%"));
    }

    fn sizes(spec: &RolloutIntentSpec, n: usize) -> Vec<usize> {
        let infos = clusters(n);
        let placed: Vec<&ClusterInfo> = infos.iter().collect();
        spec.plan(&placed, &[]).iter().map(Vec::len).collect()
    }

    #[test]
    fn each_way_of_grouping_cuts_the_clusters_in_order_and_none_empty() {
        let count = |n| RolloutGroups {
            count: Some(n),
            ..Default::default()
        };
        assert_eq!(sizes(&spec(count(3)), 12), [4, 4, 4]);
        assert_eq!(sizes(&spec(count(3)), 10), [4, 3, 3]);
        assert_eq!(sizes(&spec(count(5)), 2), [1, 1]);
        let size = RolloutGroups {
            size: Some(5),
            ..Default::default()
        };
        assert_eq!(sizes(&spec(size), 12), [5, 5, 2]);
        let shares = RolloutGroups {
            percentages: Some(vec![10, 50, 100]),
            ..Default::default()
        };
        assert_eq!(sizes(&spec(shares), 20), [2, 8, 10]);
        let labels = RolloutGroups {
            by_label: Some(vec!["canary".into(), "absent".into()]),
            ..Default::default()
        };
        assert_eq!(sizes(&spec(labels), 12), [3, 9]);
    }

    #[test]
    fn clusters_left_behind_go_with_the_last_group() {
        let infos = clusters(4);
        let placed: Vec<&ClusterInfo> = infos.iter().collect();
        let gone = ClusterRef::new("p", "old");
        let groups = spec(RolloutGroups {
            count: Some(2),
            ..Default::default()
        })
        .plan(&placed, std::slice::from_ref(&gone));
        assert_eq!(groups[1].last(), Some(&gone));
        assert_eq!(groups[0][0], ClusterRef::new("p", "c00"));
    }

    #[test]
    fn a_spec_is_refused_by_the_field_at_fault() {
        let field = |groups: RolloutGroups| {
            spec(groups)
                .check(&Scope { parent: &[] })
                .unwrap_err()
                .field
        };
        assert_eq!(field(RolloutGroups::default()), "spec.groups");
        let zero = RolloutGroups {
            count: Some(0),
            ..Default::default()
        };
        assert_eq!(field(zero), "spec.groups.count");
        let falling = RolloutGroups {
            percentages: Some(vec![50, 20, 100]),
            ..Default::default()
        };
        assert_eq!(field(falling), "spec.groups.percentages");
    }
}
