//! What a cluster deployment keeps beside its resource, sealed as its
//! secrets: the run's record (state, times, each machine's progress and
//! host key) and the cluster's keys and certificates.

use serde::{Deserialize, Serialize};

use wasmco_clusters::ClusterMaterial;
use wasmco_core::eggo::eggops::Picked;
use wasmco_core::wire::{ClusterDeploymentState, DeployProgress, NodeProgress};
use wasmco_store::appcontext::now;
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
    /// The kind of the last run begun (its running state).
    #[serde(default)]
    pub(super) run: Option<ClusterDeploymentState>,
    /// The machines a join adds or a delete takes out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) scope: Vec<String>,
    /// Whether the cleanup terminates what is deployed on the cluster first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) force: bool,
    /// A requested cluster's machines, held from their pick to the end of
    /// its cleanup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) machines: Option<Picked>,
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
            run: None,
            scope: Vec::new(),
            force: false,
            machines: None,
        }
    }
}

impl RunRecord {
    /// Starts a run that leads to `next` (`Deploying`, `CleaningUp`, …) on
    /// `host`, over `scope`'s machines for a join or delete. The progress
    /// of another kind of run is dropped, all but the machines' pinned
    /// host keys; a run of the same kind over the same machines resumes
    /// from where the last one stopped.
    pub(super) fn begin(
        &mut self,
        next: ClusterDeploymentState,
        host: Option<String>,
        scope: Vec<String>,
    ) {
        let last = self.run.unwrap_or(match self.progress.phase {
            Some(phase) if phase.is_cleanup() => ClusterDeploymentState::CleaningUp,
            _ => ClusterDeploymentState::Deploying,
        });
        if last != next || self.scope != scope {
            let nodes = std::mem::take(&mut self.progress.nodes);
            self.progress = DeployProgress::default();
            for (node, progress) in nodes {
                self.progress.nodes.insert(
                    node,
                    NodeProgress {
                        host_key: progress.host_key,
                        ..NodeProgress::default()
                    },
                );
            }
        }
        self.state = next;
        self.run = Some(next);
        self.scope = scope;
        self.started = Some(now());
        self.ended = None;
        self.host = host;
        self.progress.error = None;
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
