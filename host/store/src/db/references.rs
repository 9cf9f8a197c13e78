//! The reference indexes: `ref/` from each target to what names it, and
//! `out/` from each referrer to what it names, kept in step with the
//! bodies.

use wasmco_core::Reference;

use super::database::ResourceDb;
use super::error::DbError;
use super::id::{ResourceId, separator_key};
use crate::kv::BatchOp;

impl ResourceDb {
    /// Checks that every reference resolves; returns the index entries to write.
    pub(super) fn check_references(
        &self,
        id: &ResourceId,
        references: &[Reference],
    ) -> Result<Vec<BatchOp>, DbError> {
        let mut ops = Vec::new();
        for reference in references {
            let target = ResourceId::new(reference.kind, reference.path.clone());
            if !self.exists(&target)? {
                return Err(DbError::ReferenceNotFound {
                    field: reference.field.clone(),
                    target,
                });
            }
            ops.push(BatchOp::Put(
                separator_key("ref", &target.key(), &id.key()),
                reference.field.clone().into_bytes(),
            ));
            ops.push(BatchOp::Put(
                separator_key("out", &id.key(), &target.key()),
                Vec::new(),
            ));
        }
        Ok(ops)
    }

    /// The deletions that remove `id`'s outgoing references from both indexes.
    pub(super) fn drop_references(&self, id: &ResourceId) -> Result<Vec<BatchOp>, DbError> {
        let own = id.key();
        let mut ops = Vec::new();
        for (key, _) in self.store.scan_prefix(&separator_key("out", &own, b""))? {
            if let Some(target) = key.rsplit(|&b| b == 0).next() {
                ops.push(BatchOp::Delete(separator_key("ref", target, &own)));
            }
            ops.push(BatchOp::Delete(key));
        }
        Ok(ops)
    }
}
