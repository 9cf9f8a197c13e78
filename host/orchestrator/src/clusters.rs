//! The registered clusters as placement and caCert groups see them: each
//! with its labels and key/value pairs.

use std::collections::BTreeMap;

use serde_json::Value;

use wasmco_core::Kind;
use wasmco_core::specs::KvPairSpec;
use wasmco_store::db::{DbError, ResourceDb};

use crate::draft::ClusterInfo;

/// Every registered cluster with its labels and key/value pairs: a few
/// scans per provider, not per cluster (each is a round trip on etcd).
pub(crate) fn clusters(db: &ResourceDb) -> Result<Vec<ClusterInfo>, DbError> {
    let mut clusters = Vec::new();
    for (provider, _) in db.list(Kind::ClusterProvider, &[])? {
        let mut labels = labels(db, &provider.path)?;
        let mut kv = kv_pairs(db, &provider.path)?;
        for (cluster, _) in db.list(Kind::Cluster, &provider.path)? {
            let name = &cluster.path[1];
            clusters.push(ClusterInfo {
                provider: cluster.path[0].clone(),
                name: name.clone(),
                labels: labels.remove(name).unwrap_or_default(),
                kv: kv.remove(name).unwrap_or_default(),
            });
        }
    }
    Ok(clusters)
}

/// The labels of a provider's clusters, by cluster.
fn labels(db: &ResourceDb, provider: &[String]) -> Result<BTreeMap<String, Vec<String>>, DbError> {
    let mut labels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (label, body) in db.list_under(Kind::ClusterLabel, provider)? {
        if let (Some(cluster), Some(label)) = (label.path.get(1), body["clusterLabel"].as_str()) {
            labels
                .entry(cluster.clone())
                .or_default()
                .push(label.to_owned());
        }
    }
    Ok(labels)
}

/// The key/value pairs of a provider's clusters, by cluster.
fn kv_pairs(
    db: &ResourceDb,
    provider: &[String],
) -> Result<BTreeMap<String, Vec<(String, String)>>, DbError> {
    let mut kv: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (id, body) in db.list_under(Kind::ClusterKvPair, provider)? {
        let Some(cluster) = id.path.get(1) else {
            continue;
        };
        let pairs: KvPairSpec =
            wasmco_core::read_spec(&body["spec"]).map_err(|e| DbError::Corrupt {
                id: id.clone(),
                reason: e.to_string(),
            })?;
        for (key, value) in pairs.kv.into_iter().flatten() {
            // The API admits strings only.
            if let Value::String(value) = value {
                kv.entry(cluster.clone()).or_default().push((key, value));
            }
        }
    }
    Ok(kv)
}
