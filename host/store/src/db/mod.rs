//! The resource database: the API's resources over a [`KvStore`].
//!
//! Only this module knows the key layout:
//!
//! ```text
//! res/<kind>/<path…>                 the resource's JSON body
//! file/<kind>/<path…>                its multipart file (kubeconfig, .wasm, manifests)
//! ref/<target key>\0<referrer key>   "referrer names target" (field name as value)
//! out/<referrer key>\0<target key>   the same, indexed from the referrer
//! token/<name>                       a scoped API token (its hash, never the secret)
//! ```
//!
//! Writes are serialised by one lock, so the checks that make a write valid
//! (parent exists, name free, references resolve, nothing refers to what is
//! deleted) cannot race with another write; each write is one atomic, durable
//! batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::Value;

use wasmco_core::{Kind, Reference};

use crate::secrets::MasterKey;
use crate::{BatchOp, KvStore};

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

/// The API's resources.
#[derive(Clone)]
pub struct ResourceDb {
    store: Arc<dyn KvStore>,
    writes: Arc<Mutex<()>>,
    lists: Arc<ListCache>,
    master_key: Option<Arc<MasterKey>>,
}

/// Collections as JSON arrays, ready to send. Any write empties it: writes
/// are rare next to reads, and a whole-cache flush cannot miss a dependency.
#[derive(Default)]
struct ListCache {
    /// Bumped after every write, before the cache is emptied, so a list read
    /// while a write landed is not cached (see [`ResourceDb::list_json`]).
    generation: AtomicU64,
    arrays: Mutex<HashMap<Vec<u8>, Bytes>>,
}

impl ListCache {
    fn arrays(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Bytes>> {
        self.arrays.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.arrays().clear();
    }
}

impl ResourceDb {
    /// The database over `store`.
    pub fn new(store: Arc<dyn KvStore>) -> Self {
        ResourceDb {
            store,
            writes: Arc::new(Mutex::new(())),
            lists: Arc::default(),
            master_key: None,
        }
    }

    /// The database over `store`, sealing secret files (kubeconfigs) and
    /// secrets under `master_key`.
    pub fn with_master_key(store: Arc<dyn KvStore>, master_key: Arc<MasterKey>) -> Self {
        ResourceDb {
            master_key: Some(master_key),
            ..Self::new(store)
        }
    }

    /// The underlying store (for size reports).
    pub fn store(&self) -> &Arc<dyn KvStore> {
        &self.store
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        // The guard protects no data of its own; a panic elsewhere leaves nothing half-done.
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `id` is stored.
    pub fn exists(&self, id: &ResourceId) -> Result<bool, DbError> {
        Ok(self.store.get(&id.key())?.is_some())
    }

    fn decode(id: &ResourceId, bytes: &[u8]) -> Result<Value, DbError> {
        serde_json::from_slice(bytes).map_err(|e| DbError::Corrupt {
            id: id.clone(),
            reason: e.to_string(),
        })
    }

    /// The body of `id`.
    pub fn get(&self, id: &ResourceId) -> Result<Value, DbError> {
        match self.store.get(&id.key())? {
            Some(bytes) => Self::decode(id, &bytes),
            None => Err(DbError::NotFound(id.clone())),
        }
    }

    /// The spec of `id` as its kind's type (see `wasmco_core::specs`). The
    /// API checked it on the way in, so a mismatch means the store was
    /// changed behind its back.
    pub fn spec<T: DeserializeOwned>(&self, id: &ResourceId) -> Result<T, DbError> {
        let body = self.get(id)?;
        Self::spec_of(id, &body)
    }

    /// Every resource of `kind` under `parent_path`, with its spec as `T`.
    pub fn list_specs<T: DeserializeOwned>(
        &self,
        kind: Kind,
        parent_path: &[String],
    ) -> Result<Vec<(ResourceId, T)>, DbError> {
        self.list(kind, parent_path)?
            .into_iter()
            .map(|(id, body)| {
                let spec = Self::spec_of(&id, &body)?;
                Ok((id, spec))
            })
            .collect()
    }

    fn spec_of<T: DeserializeOwned>(id: &ResourceId, body: &Value) -> Result<T, DbError> {
        wasmco_core::read_spec(&body["spec"]).map_err(|e| DbError::Corrupt {
            id: id.clone(),
            reason: e.to_string(),
        })
    }

    /// The body of `id` as stored (JSON text), for answering without re-encoding.
    pub fn get_raw(&self, id: &ResourceId) -> Result<Vec<u8>, DbError> {
        self.store
            .get(&id.key())?
            .ok_or_else(|| DbError::NotFound(id.clone()))
    }

    /// The file stored with `id`.
    pub fn file(&self, id: &ResourceId) -> Result<Option<Vec<u8>>, DbError> {
        let key = id.key_with("file");
        match self.store.get(&key)? {
            Some(bytes) if id.kind.file_is_secret() => self.open(&key, bytes).map(Some),
            other => Ok(other),
        }
    }

    /// Every resource of `kind` under `parent_path`, in name order; the parent
    /// must exist.
    pub fn list(
        &self,
        kind: Kind,
        parent_path: &[String],
    ) -> Result<Vec<(ResourceId, Value)>, DbError> {
        self.list_raw(kind, parent_path)?
            .into_iter()
            .map(|(id, bytes)| {
                let body = Self::decode(&id, &bytes)?;
                Ok((id, body))
            })
            .collect()
    }

    /// [`Self::list`] with the bodies as stored (JSON text).
    pub fn list_raw(
        &self,
        kind: Kind,
        parent_path: &[String],
    ) -> Result<Vec<(ResourceId, Vec<u8>)>, DbError> {
        self.check_collection_parent(kind, parent_path)?;
        let probe = ResourceId::new(kind, parent_path.to_vec());
        let prefix = collection_prefix(kind, parent_path);
        Ok(self
            .store
            .scan_prefix(&prefix)?
            .into_iter()
            .map(|(key, bytes)| {
                (
                    ResourceId::from_key(&key).unwrap_or_else(|| probe.clone()),
                    bytes,
                )
            })
            .collect())
    }

    /// The bodies of [`Self::list`] as one JSON array, from the list cache
    /// when it holds the collection.
    pub fn list_json(&self, kind: Kind, parent_path: &[String]) -> Result<Bytes, DbError> {
        let prefix = collection_prefix(kind, parent_path);
        if let Some(array) = self.lists.arrays().get(&prefix) {
            return Ok(array.clone());
        }
        let generation = self.lists.generation.load(Ordering::SeqCst);
        self.check_collection_parent(kind, parent_path)?;
        let mut out = vec![b'['];
        self.store.visit_prefix(&prefix, &mut |_, body| {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(body);
        })?;
        out.push(b']');
        let array = Bytes::from(out);
        let mut arrays = self.lists.arrays();
        // A write that landed since the scan began may be missing from it.
        if self.lists.generation.load(Ordering::SeqCst) == generation {
            arrays.insert(prefix, array.clone());
        }
        Ok(array)
    }

    fn check_collection_parent(&self, kind: Kind, parent_path: &[String]) -> Result<(), DbError> {
        if let Some(parent) = ResourceId::new(kind, parent_path.to_vec()).parent_of_collection()
            && !self.exists(&parent)?
        {
            return Err(DbError::ParentNotFound(parent));
        }
        Ok(())
    }

    /// Stores a new resource.
    pub fn create(&self, id: &ResourceId, write: Write) -> Result<(), DbError> {
        let _guard = self.lock();
        if let Some(parent) = id.parent()
            && !self.exists(&parent)?
        {
            return Err(DbError::ParentNotFound(parent));
        }
        if self.exists(id)? {
            return Err(DbError::AlreadyExists(id.clone()));
        }
        let ops = self.check_references(id, &write.references)?;
        self.commit(ops, id, write)
    }

    /// Replaces an existing resource's body (and file, when given).
    pub fn update(&self, id: &ResourceId, write: Write) -> Result<(), DbError> {
        let _guard = self.lock();
        if !self.exists(id)? {
            return Err(DbError::NotFound(id.clone()));
        }
        let mut ops = self.drop_references(id)?;
        ops.extend(self.check_references(id, &write.references)?);
        self.commit(ops, id, write)
    }

    /// Writes `ops` plus `id`'s body and file as one batch.
    fn commit(&self, mut ops: Vec<BatchOp>, id: &ResourceId, write: Write) -> Result<(), DbError> {
        ops.push(BatchOp::Put(id.key(), write.body.to_string().into_bytes()));
        if let Some(file) = write.file {
            let key = id.key_with("file");
            let file = if id.kind.file_is_secret() {
                self.seal(&key, file)
            } else {
                file
            };
            ops.push(BatchOp::Put(key, file));
        }
        self.store.batch(ops)?;
        self.lists.invalidate();
        Ok(())
    }

    /// Deletes a resource that nothing refers to, with the resources it owns
    /// (a cluster's labels and kv-pairs, an app's dependencies, …).
    pub fn delete(&self, id: &ResourceId) -> Result<(), DbError> {
        let _guard = self.lock();
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
        self.store.batch(ops)?;
        self.lists.invalidate();
        Ok(())
    }

    /// Checks that every reference resolves; returns the index entries to write.
    fn check_references(
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
    fn drop_references(&self, id: &ResourceId) -> Result<Vec<BatchOp>, DbError> {
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

mod error;
mod id;
mod sealed;
#[cfg(test)]
mod tests;
mod tokens;

pub use error::DbError;
pub use id::ResourceId;
use id::{collection_prefix, separator_key};

pub use tokens::TokenError;
