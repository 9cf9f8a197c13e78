//! Secrets kept beside resources (a cluster's CA key, a logical cloud's
//! kubeconfigs) and the host's own, sealed under the master key when one
//! is set.

use super::database::ResourceDb;
use super::error::DbError;
use super::id::{ResourceId, separator_key};
use crate::kv::BatchOp;

impl ResourceDb {
    pub(super) fn seal(&self, key: &[u8], bytes: Vec<u8>) -> Vec<u8> {
        match &self.master_key {
            Some(master) => master.seal(key, &bytes),
            None => bytes,
        }
    }

    pub(super) fn open(&self, key: &[u8], bytes: Vec<u8>) -> Result<Vec<u8>, DbError> {
        match &self.master_key {
            Some(master) => master.open(key, &bytes).map_err(DbError::Sealed),
            None => Ok(bytes),
        }
    }

    /// Stores secret `name` of `id` (sealed; deleted with `id`).
    pub fn put_secret(&self, id: &ResourceId, name: &str, secret: &[u8]) -> Result<(), DbError> {
        let key = separator_key("secret", &id.key(), name.as_bytes());
        let sealed = self.seal(&key, secret.to_vec());
        self.serialised(|| {
            if !self.exists(id)? {
                return Err(DbError::NotFound(id.clone()));
            }
            Ok((vec![BatchOp::Put(key.clone(), sealed.clone())], ()))
        })
    }

    /// Forgets secret `name` of `id`, if it has one.
    pub fn delete_secret(&self, id: &ResourceId, name: &str) -> Result<(), DbError> {
        let key = separator_key("secret", &id.key(), name.as_bytes());
        self.serialised(|| Ok((vec![BatchOp::Delete(key.clone())], ())))
    }

    /// Stores a secret of the host itself (its TLS CA), sealed.
    pub fn put_host_secret(&self, name: &str, secret: &[u8]) -> Result<(), DbError> {
        let key = separator_key("secret", b"host", name.as_bytes());
        let sealed = self.seal(&key, secret.to_vec());
        self.serialised(|| Ok((vec![BatchOp::Put(key.clone(), sealed.clone())], ())))
    }

    /// A secret of the host itself, opened.
    pub fn host_secret(&self, name: &str) -> Result<Option<Vec<u8>>, DbError> {
        let key = separator_key("secret", b"host", name.as_bytes());
        match self.store.get(&key)? {
            Some(sealed) => self.open(&key, sealed).map(Some),
            None => Ok(None),
        }
    }

    /// Secret `name` of `id`, opened.
    pub fn secret(&self, id: &ResourceId, name: &str) -> Result<Option<Vec<u8>>, DbError> {
        let key = separator_key("secret", &id.key(), name.as_bytes());
        match self.store.get(&key)? {
            Some(sealed) => self.open(&key, sealed).map(Some),
            None => Ok(None),
        }
    }
}
