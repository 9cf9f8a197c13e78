//! Creating and updating resources: each write checked against what is
//! stored and applied as one batch.

use serde_json::Value;

use wasmco_core::Reference;

use super::database::ResourceDb;
use super::error::DbError;
use super::id::ResourceId;
use crate::kv::BatchOp;

/// What a create or update writes.
#[derive(Debug, Clone)]
pub struct Write {
    /// The body to store and return.
    pub body: Value,
    /// The resources the body names.
    pub references: Vec<Reference>,
    /// The multipart file, if the kind has one (on update, `None` keeps the old one).
    pub file: Option<Vec<u8>>,
}

impl ResourceDb {
    /// Stores a new resource.
    pub fn create(&self, id: &ResourceId, write: Write) -> Result<(), DbError> {
        self.serialised(|| {
            if let Some(parent) = id.parent()
                && !self.exists(&parent)?
            {
                return Err(DbError::ParentNotFound(parent));
            }
            if self.exists(id)? {
                return Err(DbError::AlreadyExists(id.clone()));
            }
            let ops = self.check_references(id, &write.references)?;
            Ok((self.with_body(ops, id, &write), ()))
        })
    }

    /// Replaces an existing resource's body (and file, when given).
    pub fn update(&self, id: &ResourceId, write: Write) -> Result<(), DbError> {
        self.serialised(|| {
            if !self.exists(id)? {
                return Err(DbError::NotFound(id.clone()));
            }
            let mut ops = self.drop_references(id)?;
            ops.extend(self.check_references(id, &write.references)?);
            Ok((self.with_body(ops, id, &write), ()))
        })
    }

    /// `ops` followed by the writes of `id`'s body and file.
    fn with_body(&self, mut ops: Vec<BatchOp>, id: &ResourceId, write: &Write) -> Vec<BatchOp> {
        ops.push(BatchOp::Put(id.key(), write.body.to_string().into_bytes()));
        if let Some(file) = &write.file {
            let key = id.key_with("file");
            let file = if id.kind.file_is_secret() {
                self.seal(&key, file.clone())
            } else {
                file.clone()
            };
            ops.push(BatchOp::Put(key, file));
        }
        ops
    }
}
