//! A deployed cluster joins the fleet: registered under its provider with
//! its admin kubeconfig (sealed, as every cluster's) and the deployment's
//! labels, its authorities kept as the cluster's PKI, rsync told.

use serde_json::json;

use wasmco_clusters::Deployment;
use wasmco_core::Kind;
use wasmco_pki::kubeconfig::KubeconfigPolicy;
use wasmco_store::db::{DbError, ResourceDb, ResourceId, Write};

use crate::error::OrchestratorError;

/// The cluster `name` under `provider`, as `deployment` made it.
pub(super) struct NewCluster<'a> {
    pub(super) provider: &'a str,
    pub(super) name: &'a str,
    pub(super) labels: &'a [String],
    /// The deployment it comes from, for its description.
    pub(super) deployment_name: &'a str,
}

/// Registers (or, when a run registered it before, updates) the cluster.
pub(super) fn register(
    db: &ResourceDb,
    policy: &KubeconfigPolicy,
    cluster: &NewCluster<'_>,
    deployment: &Deployment,
) -> Result<(), OrchestratorError> {
    let id = ResourceId::new(
        Kind::Cluster,
        vec![cluster.provider.to_owned(), cluster.name.to_owned()],
    );
    let kubeconfig = deployment.admin_kubeconfig().into_bytes();
    let status = wasmco_pki::kubeconfig::cluster_status(policy, &kubeconfig).map_err(|e| {
        OrchestratorError::Conflict(format!(
            "the deployed cluster's kubeconfig is refused by this host's kubeconfig policy \
             ({}: {}); the cluster is up but not registered",
            e.field, e.reason
        ))
    })?;
    let write = Write {
        body: json!({
            "metadata": {
                "name": cluster.name,
                "description": format!("made by cluster deployment {}", cluster.deployment_name),
            },
            "spec": {},
            "status": status,
        }),
        references: Vec::new(),
        file: Some(kubeconfig),
    };
    match db.get(&id) {
        Ok(_) => db.update(&id, write)?,
        Err(DbError::NotFound(_)) => db.create(&id, write)?,
        Err(other) => return Err(other.into()),
    }
    crate::cluster_pki::save(db, &id, &deployment.material.pki)?;
    for label in cluster.labels {
        let mut path = id.path.clone();
        path.push(label.clone());
        let label_id = ResourceId::new(Kind::ClusterLabel, path);
        if matches!(db.get(&label_id), Err(DbError::NotFound(_))) {
            db.create(
                &label_id,
                Write {
                    body: json!({ "clusterLabel": label }),
                    references: Vec::new(),
                    file: None,
                },
            )?;
        }
    }
    Ok(())
}

/// Whether `name` under `provider` is a cluster someone registered.
pub(super) fn exists(db: &ResourceDb, provider: &str, name: &str) -> Result<bool, DbError> {
    let id = ResourceId::new(Kind::Cluster, vec![provider.to_owned(), name.to_owned()]);
    match db.get(&id) {
        Ok(_) => Ok(true),
        Err(DbError::NotFound(_)) => Ok(false),
        Err(other) => Err(other),
    }
}
