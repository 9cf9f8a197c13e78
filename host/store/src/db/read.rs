//! Reading resources: one by one, by collection, or below ancestors, as
//! values, as specs or as the JSON text stored.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::Value;

use wasmco_core::Kind;

use super::cache::CACHED_ITEMS;
use super::database::ResourceDb;
use super::error::DbError;
use super::id::{ResourceId, collection_prefix, collection_prefix_in};

impl ResourceDb {
    /// Whether `id` is stored.
    pub fn exists(&self, id: &ResourceId) -> Result<bool, DbError> {
        Ok(self.store.get(&id.key())?.is_some())
    }

    pub(super) fn decode(id: &ResourceId, bytes: &[u8]) -> Result<Value, DbError> {
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

    /// Calls `visit` with each resource [`Self::list_under`] would list
    /// and its body as stored, neither copied nor decoded: for a reader of
    /// a large collection that wants a field or two of each (100,000
    /// clusters' labels, say). After an error from `visit` it is not called
    /// again, and that error is the answer.
    pub fn visit_under(
        &self,
        kind: Kind,
        ancestors: &[String],
        mut visit: impl FnMut(ResourceId, &[u8]) -> Result<(), DbError>,
    ) -> Result<(), DbError> {
        let probe = ResourceId::new(kind, ancestors.to_vec());
        let mut outcome = Ok(());
        self.store
            .visit_prefix(&collection_prefix(kind, ancestors), &mut |key, bytes| {
                if outcome.is_ok() {
                    let id = ResourceId::from_key(key).unwrap_or_else(|| probe.clone());
                    outcome = visit(id, bytes);
                }
            })?;
        outcome
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

    pub(super) fn check_collection_parent(
        &self,
        kind: Kind,
        parent_path: &[String],
    ) -> Result<(), DbError> {
        if let Some(parent) = ResourceId::new(kind, parent_path.to_vec()).parent_of_collection()
            && !self.exists(&parent)?
        {
            return Err(DbError::ParentNotFound(parent));
        }
        Ok(())
    }
}
