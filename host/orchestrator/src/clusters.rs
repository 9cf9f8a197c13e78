//! The registered clusters as placement and caCert groups see them: each
//! with its labels and key/value pairs.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use wasmco_core::Kind;
use wasmco_core::specs::KvPairSpec;
use wasmco_store::db::{DbError, ResourceDb};

use crate::draft::ClusterInfo;

/// Every registered cluster with its labels and key/value pairs: a few
/// scans per provider, not per cluster (each is a round trip on etcd), and
/// of each label only its name decoded.
pub(crate) fn clusters(db: &ResourceDb) -> Result<Vec<ClusterInfo>, DbError> {
    let mut clusters = Vec::new();
    for (provider, _) in db.list(Kind::ClusterProvider, &[])? {
        let mut labels = labels(db, &provider.path)?;
        let mut kv = kv_pairs(db, &provider.path)?;
        db.visit_under(Kind::Cluster, &provider.path, |cluster, _| {
            if let [provider, name] = cluster.path.as_slice() {
                clusters.push(ClusterInfo {
                    labels: labels.remove(name).unwrap_or_default(),
                    kv: kv.remove(name).unwrap_or_default(),
                    provider: provider.clone(),
                    name: name.clone(),
                });
            }
            Ok(())
        })?;
    }
    Ok(clusters)
}

/// What placement reads of a cluster label.
#[derive(Deserialize)]
struct LabelBody {
    #[serde(rename = "clusterLabel")]
    label: Option<Value>,
}

/// The labels of a provider's clusters, by cluster.
fn labels(db: &ResourceDb, provider: &[String]) -> Result<HashMap<String, Vec<String>>, DbError> {
    let mut labels: HashMap<String, Vec<String>> = HashMap::new();
    db.visit_under(Kind::ClusterLabel, provider, |id, body| {
        // A label that is not a string, in a body that is not the API's,
        // is skipped as it always was; only text that is not JSON is corrupt.
        let label = match serde_json::from_slice::<LabelBody>(body) {
            Ok(LabelBody {
                label: Some(Value::String(label)),
            }) => Some(label),
            Ok(_) => None,
            Err(_) => {
                serde_json::from_slice::<Value>(body).map_err(|e| DbError::Corrupt {
                    id: id.clone(),
                    reason: e.to_string(),
                })?;
                None
            }
        };
        if let (Some(cluster), Some(label)) = (id.path.get(1), label) {
            labels.entry(cluster.clone()).or_default().push(label);
        }
        Ok(())
    })?;
    Ok(labels)
}

/// The key/value pairs of a provider's clusters, by cluster.
fn kv_pairs(
    db: &ResourceDb,
    provider: &[String],
) -> Result<HashMap<String, Vec<(String, String)>>, DbError> {
    let mut kv: HashMap<String, Vec<(String, String)>> = HashMap::new();
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
