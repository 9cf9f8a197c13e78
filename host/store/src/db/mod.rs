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
//! meta/db-writes                     how many writes the database has taken
//! ```
//!
//! Writes are serialised, so the checks that make a write valid (parent
//! exists, name free, references resolve, nothing refers to what is
//! deleted) cannot race with another write; each write is one atomic,
//! durable batch. Within a process a lock does it; across the hosts that
//! share one store, each write also moves `meta/db-writes` on from the
//! value its checks saw, and is checked again if another host's write
//! moved it first. Every host watches that key to drop its list cache.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::Value;

use wasmco_core::{Kind, Reference};

use crate::secrets::MasterKey;
use crate::{BatchOp, Change, Expect, KvStore};

/// The key every write moves on (see the module's notes).
const WRITES_KEY: &[u8] = b"meta/db-writes";

/// Times a write's checks are run again after other hosts' writes got in
/// first, before it is refused as busy.
const WRITE_ATTEMPTS: u32 = 64;

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

/// Collections as JSON arrays and items as JSON, ready to send. Any write,
/// here or by another host, empties it: writes are rare next to reads, and
/// a whole-cache flush cannot miss a dependency.
#[derive(Default)]
struct ListCache {
    /// Bumped after every write, before the cache is emptied, so a read
    /// while a write landed is not cached (see [`ResourceDb::list_json`]).
    generation: AtomicU64,
    arrays: Mutex<HashMap<Vec<u8>, Bytes>>,
    items: Mutex<HashMap<Vec<u8>, Bytes>>,
}

/// Items kept at most; past it the item cache starts again empty.
const CACHED_ITEMS: usize = 16_384;

impl ListCache {
    fn arrays(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Bytes>> {
        self.arrays.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn items(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Bytes>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.arrays().clear();
        self.items().clear();
    }
}

impl ResourceDb {
    /// The database over `store`.
    pub fn new(store: Arc<dyn KvStore>) -> Self {
        let lists = Arc::<ListCache>::default();
        let watched = Arc::downgrade(&lists);
        let watching = store.watch_prefix(
            WRITES_KEY,
            Arc::new(move |_: Change| {
                if let Some(lists) = watched.upgrade() {
                    lists.invalidate();
                }
            }),
        );
        if let Err(error) = watching {
            // Alone on its store, the host drops its cache on its own writes.
            tracing::warn!(%error, "cannot watch the store for other hosts' writes");
        }
        ResourceDb {
            store,
            writes: Arc::new(Mutex::new(())),
            lists,
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

    /// Moves on whenever a write lands here or on another host sharing the
    /// store: what was derived from the database before may be stale.
    pub fn generation(&self) -> u64 {
        self.lists.generation.load(Ordering::SeqCst)
    }

    /// Runs `checked` (the write's checks, returning its changes) and
    /// writes what it returns as one batch, serialised with every other
    /// write of every host on the store; no changes, no write.
    fn serialised<T>(
        &self,
        checked: impl Fn() -> Result<(Vec<BatchOp>, T), DbError>,
    ) -> Result<T, DbError> {
        // The guard protects no data of its own; a panic elsewhere leaves nothing half-done.
        let _guard = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        for attempt in 0..WRITE_ATTEMPTS {
            let seen = self.store.get(WRITES_KEY)?;
            let (mut ops, answer) = checked()?;
            if ops.is_empty() {
                return Ok(answer);
            }
            let count = seen
                .as_deref()
                .and_then(|bytes| std::str::from_utf8(bytes).ok()?.parse::<u64>().ok())
                .unwrap_or(0);
            ops.push(BatchOp::Put(
                WRITES_KEY.to_vec(),
                (count + 1).to_string().into_bytes(),
            ));
            let expect = match seen {
                Some(value) => Expect::Value(WRITES_KEY.to_vec(), value),
                None => Expect::Absent(WRITES_KEY.to_vec()),
            };
            if self.store.batch_if(vec![expect], ops)? {
                self.lists.invalidate();
                return Ok(answer);
            }
            // Another host wrote between the checks and the batch.
            std::thread::sleep(std::time::Duration::from_millis(
                fastrand::u64(1..=4) << attempt.min(4),
            ));
        }
        Err(DbError::Busy)
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

    /// [`Self::get_raw`], from the cache when it holds the item.
    pub fn get_json(&self, id: &ResourceId) -> Result<Bytes, DbError> {
        let key = id.key();
        if let Some(body) = self.lists.items().get(&key) {
            return Ok(body.clone());
        }
        let generation = self.lists.generation.load(Ordering::SeqCst);
        let body = Bytes::from(self.get_raw(id)?);
        let mut items = self.lists.items();
        // A write that landed since the read may be missing from it.
        if self.lists.generation.load(Ordering::SeqCst) == generation {
            if items.len() >= CACHED_ITEMS {
                items.clear();
            }
            items.insert(key, body.clone());
        }
        Ok(body)
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

    /// The declared intents in collection `segment` directly under
    /// `parent` (a deployment intent group or another intent), in name
    /// order; the parent must exist.
    pub fn list_intents(
        &self,
        parent: &ResourceId,
        segment: &str,
    ) -> Result<Vec<(ResourceId, Value)>, DbError> {
        if !self.exists(parent)? {
            return Err(DbError::ParentNotFound(parent.clone()));
        }
        let mut collection = parent.path.clone();
        collection.push(segment.to_owned());
        let depth = collection.len() + 1;
        self.list_under(Kind::Intent, &collection).map(|items| {
            items
                .into_iter()
                .filter(|(id, _)| id.path.len() == depth)
                .collect()
        })
    }

    /// Every resource of `kind` whose path starts with `ancestors`, at any
    /// depth below them (every cluster's labels of one provider, say), in
    /// path order: one scan where listing each parent would take one per
    /// parent.
    pub fn list_under(
        &self,
        kind: Kind,
        ancestors: &[String],
    ) -> Result<Vec<(ResourceId, Value)>, DbError> {
        let probe = ResourceId::new(kind, ancestors.to_vec());
        self.store
            .scan_prefix(&collection_prefix(kind, ancestors))?
            .into_iter()
            .map(|(key, bytes)| {
                let id = ResourceId::from_key(&key).unwrap_or_else(|| probe.clone());
                let body = Self::decode(&id, &bytes)?;
                Ok((id, body))
            })
            .collect()
    }

    /// The files of every resource of `kind` under `ancestors` (see
    /// [`Self::list_under`]), by resource: one scan.
    pub fn files_under(
        &self,
        kind: Kind,
        ancestors: &[String],
    ) -> Result<HashMap<ResourceId, Vec<u8>>, DbError> {
        let prefix = collection_prefix_in("file", kind, ancestors);
        let mut files = HashMap::new();
        for (key, bytes) in self.store.scan_prefix(&prefix)? {
            let Some(id) = ResourceId::from_key_in("file", &key) else {
                continue;
            };
            let file = if kind.file_is_secret() {
                self.open(&key, bytes)?
            } else {
                bytes
            };
            files.insert(id, file);
        }
        Ok(files)
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
use id::{collection_prefix, collection_prefix_in, separator_key};

pub use tokens::TokenError;
