//! What a cluster deployment keeps beside its resource, sealed as its
//! secrets: the run's record (state, times, each machine's progress and
//! host key) and the cluster's keys and certificates.

use serde::{Deserialize, Serialize};

use wasmco_clusters::ClusterMaterial;
use wasmco_core::wire::{ClusterDeploymentState, DeployProgress};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

const RECORD: &str = "deploy-run";
const MATERIAL: &str = "deploy-material";

/// The last (or current) run of a deployment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RunRecord {
    pub(super) state: ClusterDeploymentState,
    #[serde(default)]
    pub(super) started: Option<String>,
    #[serde(default)]
    pub(super) ended: Option<String>,
    #[serde(default)]
    pub(super) host: Option<String>,
    /// Whether a run registered the cluster: only then may a later run
    /// write over a cluster of that name.
    #[serde(default)]
    pub(super) registered: bool,
    #[serde(default)]
    pub(super) progress: DeployProgress,
}

impl Default for RunRecord {
    fn default() -> Self {
        RunRecord {
            state: ClusterDeploymentState::Created,
            started: None,
            ended: None,
            host: None,
            registered: false,
            progress: DeployProgress::default(),
        }
    }
}

fn corrupt(id: &ResourceId, what: &str, e: serde_json::Error) -> DbError {
    DbError::Corrupt {
        id: id.clone(),
        reason: format!("its {what}: {e}"),
    }
}

/// `id`'s record; a deployment never run has the default one.
pub(super) fn load(db: &ResourceDb, id: &ResourceId) -> Result<RunRecord, DbError> {
    match db.secret(id, RECORD)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| corrupt(id, "run record", e)),
        None => Ok(RunRecord::default()),
    }
}

pub(super) fn save(db: &ResourceDb, id: &ResourceId, record: &RunRecord) -> Result<(), DbError> {
    // Plain data always serialises.
    db.put_secret(id, RECORD, &serde_json::to_vec(record).unwrap_or_default())
}

/// The keys and certificates an earlier run made for the cluster.
pub(super) fn material(
    db: &ResourceDb,
    id: &ResourceId,
) -> Result<Option<ClusterMaterial>, DbError> {
    match db.secret(id, MATERIAL)? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| corrupt(id, "cluster material", e)),
        None => Ok(None),
    }
}

pub(super) fn save_material(
    db: &ResourceDb,
    id: &ResourceId,
    material: &ClusterMaterial,
) -> Result<(), DbError> {
    db.put_secret(
        id,
        MATERIAL,
        &serde_json::to_vec(material).unwrap_or_default(),
    )
}
