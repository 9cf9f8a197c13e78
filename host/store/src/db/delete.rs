//! Deleting a resource with what it owns, once nothing refers to it and
//! nothing it does not own lives under it.

use wasmco_core::Kind;

use super::database::ResourceDb;
use super::error::DbError;
use super::id::{ResourceId, collection_prefix, separator_key};
use crate::kv::BatchOp;

impl ResourceDb {
    /// Deletes a resource that nothing refers to, with the resources it owns
    /// (a cluster's labels and kv-pairs, an app's dependencies, …).
    pub fn delete(&self, id: &ResourceId) -> Result<(), DbError> {
        self.serialised(|| Ok((self.deletion(id)?, ())))
    }

    /// The writes that delete `id` and what it owns, once checked.
    fn deletion(&self, id: &ResourceId) -> Result<Vec<BatchOp>, DbError> {
        if !self.exists(id)? {
            return Err(DbError::NotFound(id.clone()));
        }
        let by: Vec<String> = self
            .store
            .scan_prefix(&separator_key("ref", &id.key(), b""))?
            .into_iter()
            .filter_map(|(key, _)| {
                let referrer = key.rsplit(|&b| b == 0).next()?;
                ResourceId::from_key(referrer).map(|r| r.describe())
            })
            .collect();
        if !by.is_empty() {
            return Err(DbError::InUse {
                target: id.clone(),
                by,
            });
        }
        let mut doomed = vec![id.clone()];
        let mut blocking = Vec::new();
        for child in id.kind.children() {
            for (child_key, _) in self
                .store
                .scan_prefix(&collection_prefix(child, &id.path))?
            {
                let Some(child_id) = ResourceId::from_key(&child_key) else {
                    continue;
                };
                if child.info().owned_by_parent {
                    doomed.push(child_id);
                } else {
                    blocking.push(child_id.describe());
                }
            }
        }
        if id.kind == Kind::Intent {
            // Its children are intents below its own path.
            for (child_key, _) in self
                .store
                .scan_prefix(&collection_prefix(Kind::Intent, &id.path))?
            {
                if let Some(child_id) = ResourceId::from_key(&child_key) {
                    blocking.push(child_id.describe());
                }
            }
        }
        if !blocking.is_empty() {
            return Err(DbError::HasChildren {
                target: id.clone(),
                children: blocking,
            });
        }
        let mut ops = Vec::new();
        for doomed in &doomed {
            ops.extend(self.drop_references(doomed)?);
            ops.push(BatchOp::Delete(doomed.key()));
            ops.push(BatchOp::Delete(doomed.key_with("file")));
            for (key, _) in self
                .store
                .scan_prefix(&separator_key("secret", &doomed.key(), b""))?
            {
                ops.push(BatchOp::Delete(key));
            }
        }
        Ok(ops)
    }
}
