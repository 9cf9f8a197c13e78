//! Scoped API tokens, by name: `token/<name>` holds the record (the
//! secret's hash, never the secret).

use wasmco_core::tokens::TokenRecord;

use super::database::ResourceDb;
use super::error::DbError;
use crate::kv::BatchOp;

fn token_key(name: &str) -> Vec<u8> {
    format!("token/{name}").into_bytes()
}

/// Why a token could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// A token of that name exists.
    #[error("token {0} already exists; revoke it first")]
    Exists(String),
    /// The record would not encode.
    #[error("cannot encode the token record: {0}")]
    Encode(#[source] serde_json::Error),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl ResourceDb {
    /// Stores a new token record.
    pub fn create_token(&self, record: &TokenRecord) -> Result<(), TokenError> {
        let key = token_key(&record.name);
        let body = serde_json::to_vec(record).map_err(TokenError::Encode)?;
        let created = self.serialised(|| {
            if self.store.get(&key)?.is_some() {
                return Ok((Vec::new(), false));
            }
            Ok((vec![BatchOp::Put(key.clone(), body.clone())], true))
        })?;
        if !created {
            return Err(TokenError::Exists(record.name.clone()));
        }
        Ok(())
    }

    /// Every token record, by name; records that do not decode are skipped
    /// with a warning (they grant nothing).
    pub fn tokens(&self) -> Result<Vec<TokenRecord>, DbError> {
        Ok(self
            .store
            .scan_prefix(b"token/")?
            .into_iter()
            .filter_map(|(key, bytes)| match serde_json::from_slice(&bytes) {
                Ok(record) => Some(record),
                Err(error) => {
                    tracing::warn!(key = %String::from_utf8_lossy(&key), %error, "unreadable token record ignored");
                    None
                }
            })
            .collect())
    }

    /// Whether `record` is still stored as it was read: a host sharing the
    /// store may have revoked it (or revoked and issued it again) a moment
    /// ago, before this host's watch of the store said so.
    pub fn token_stands(&self, record: &TokenRecord) -> Result<bool, DbError> {
        let Some(bytes) = self.store.get(&token_key(&record.name))? else {
            return Ok(false);
        };
        Ok(serde_json::from_slice::<TokenRecord>(&bytes)
            .is_ok_and(|stored| stored.digest == record.digest))
    }

    /// Deletes a token record; `false` when there was none.
    pub fn delete_token(&self, name: &str) -> Result<bool, DbError> {
        let key = token_key(name);
        self.serialised(|| {
            if self.store.get(&key)?.is_none() {
                return Ok((Vec::new(), false));
            }
            Ok((vec![BatchOp::Delete(key.clone())], true))
        })
    }
}
