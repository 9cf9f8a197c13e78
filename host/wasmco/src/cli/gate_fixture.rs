//! `wasmco controller test` of a gate controller: a rollout's moment
//! written down (the groups released so far, what is Ready where, how
//! long), asked as the server asks, and the verdict described.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use wasmco_core::ClusterInfo;
use wasmco_runtime::Controller;
use wasmco_runtime::contract::{GateCell, GateFacts, Verdict};

use super::error::CliError;
use super::scenario::{ScenarioCluster, cluster_infos};

/// A rollout as a gate sees it, between two groups.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GateFixture {
    /// The clusters the groups name.
    pub clusters: Vec<ScenarioCluster>,
    /// The groups released so far, in order, by cluster name (`name` or
    /// `provider/name`); the last is the one that just became Ready.
    pub released: Vec<Vec<String>>,
    /// How many groups the rollout has; as many as released when left out.
    #[serde(default)]
    pub groups: Option<u32>,
    /// The revision rolled out (2 when left out).
    #[serde(default = "second")]
    pub revision: u64,
    /// The revision before it (1 when left out).
    #[serde(default = "first")]
    pub from_revision: u64,
    /// Every app on the released clusters; a cluster missing here runs none.
    #[serde(default)]
    pub status: Vec<CellFixture>,
    /// Released clusters the probes find unreachable.
    #[serde(default)]
    pub unreachable: Vec<String>,
    /// Milliseconds since the last group was released.
    #[serde(default)]
    pub released_ms: u64,
    /// Milliseconds since the last group was first seen Ready (0: not yet).
    #[serde(default)]
    pub ready_ms: u64,
    /// The gate's intent.
    #[serde(default)]
    pub intent: Value,
}

fn first() -> u64 {
    1
}

fn second() -> u64 {
    2
}

/// One app on one released cluster.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellFixture {
    /// The app.
    pub app: String,
    /// The cluster, by name.
    pub cluster: String,
    /// The app's resources there.
    pub resources: u32,
    /// Of them, Ready.
    #[serde(default)]
    pub ready: u32,
    /// Of them, Failed.
    #[serde(default)]
    pub failed: u32,
}

/// Asks `controller` (a gate) about `fixture`; its verdict and log.
pub fn check(controller: &Controller, fixture: Value) -> Result<Value, CliError> {
    let fixture: GateFixture = serde_json::from_value(fixture)
        .map_err(|e| CliError::Usage(format!("the gate fixture: {e}")))?;
    let infos = cluster_infos(&fixture.clusters);
    let by_name: BTreeMap<String, &ClusterInfo> = infos
        .iter()
        .flat_map(|c| {
            [
                (c.name.clone(), c),
                (format!("{}/{}", c.provider, c.name), c),
            ]
        })
        .collect();
    let find = |field: &str, name: &str| {
        by_name.get(name).copied().ok_or_else(|| {
            CliError::Usage(format!(
                "the gate fixture's {field}: no cluster `{name}` in clusters"
            ))
        })
    };
    let released = fixture
        .released
        .iter()
        .map(|group| group.iter().map(|name| find("released", name)).collect())
        .collect::<Result<Vec<Vec<&ClusterInfo>>, _>>()?;
    let flat: Vec<&ClusterInfo> = released.iter().flatten().copied().collect();
    let index = |field: &str, name: &str| -> Result<u32, CliError> {
        let cluster = find(field, name)?;
        let position = flat.iter().position(|c| std::ptr::eq(*c, cluster));
        position.map(|i| i as u32).ok_or_else(|| {
            CliError::Usage(format!(
                "the gate fixture's {field}: `{name}` is in no released group"
            ))
        })
    };
    let cells = fixture
        .status
        .iter()
        .map(|cell| {
            Ok(GateCell {
                app: &cell.app,
                cluster: index("status", &cell.cluster)?,
                resources: cell.resources,
                ready: cell.ready,
                failed: cell.failed,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let unreachable = fixture
        .unreachable
        .iter()
        .map(|name| index("unreachable", name))
        .collect::<Result<Vec<_>, _>>()?;
    let intent = fixture.intent.to_string();
    let count = u32::try_from(released.len()).unwrap_or(u32::MAX);
    let facts = GateFacts {
        intent: &intent,
        revision: fixture.revision,
        from_revision: fixture.from_revision,
        groups: fixture.groups.unwrap_or(count).max(count),
        released,
        cells,
        unreachable,
        released_ms: fixture.released_ms,
        ready_ms: fixture.ready_ms,
    };
    let output = controller
        .check(&facts.request())
        .map_err(|e| CliError::Usage(format!("the controller failed: {e}")))?;
    let verdict = match output.value {
        Verdict::Proceed => json!("proceed"),
        Verdict::Wait(wait) => {
            json!({"wait": {"reason": wait.reason, "retryAfterMs": wait.retry_after_ms}})
        }
        Verdict::Abort(reason) => json!({"abort": reason}),
    };
    Ok(json!({"controller": "gate", "verdict": verdict, "log": output.log.text}))
}
