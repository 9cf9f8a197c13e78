//! The context store itself: the handle over a [`KvStore`], how it reads
//! and writes JSON values, fenced writes, and a DIG's state and note.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::error::ContextError;
use super::state::DigState;
use crate::kv::{BatchOp, Expect, KvStore};

/// The condition a write is made under, when several hosts share the
/// store: the writer still holds the target's action lock (or owns its
/// reconcile). A host whose lease ran out while it was stopped then
/// writes nothing over what the next holder wrote. `None` for a host
/// alone on its store.
pub type Fence<'a> = Option<&'a Expect>;

/// AppContexts and DIG states over a [`KvStore`].
#[derive(Clone)]
pub struct ContextStore {
    pub(super) store: Arc<dyn KvStore>,
    /// Held while an app's statuses on a cluster are written with their
    /// tally, so that two writers' tallies cannot cross (striped by cell).
    pub(super) tallying: Arc<[Mutex<()>; TALLY_STRIPES]>,
}

const TALLY_STRIPES: usize = 32;

impl ContextStore {
    /// The context store over `store`.
    pub fn new(store: Arc<dyn KvStore>) -> Self {
        ContextStore {
            store,
            tallying: Arc::new(std::array::from_fn(|_| Mutex::new(()))),
        }
    }

    pub(super) fn get_json<T: for<'de> Deserialize<'de>>(
        &self,
        key: &str,
    ) -> Result<Option<T>, ContextError> {
        match self.store.get(key.as_bytes())? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| ContextError::corrupt(key, e)),
        }
    }

    /// The DIG's state; `Created` when nothing was done to it.
    pub fn state(&self, dig: &str) -> Result<DigState, ContextError> {
        Ok(self
            .get_json(&format!("ctx/{dig}/state"))?
            .unwrap_or_else(DigState::created))
    }

    /// The write that stores `state` (to batch with a context).
    pub fn state_op(dig: &str, state: &DigState) -> BatchOp {
        BatchOp::Put(
            format!("ctx/{dig}/state").into_bytes(),
            serde_json::to_vec(state).unwrap_or_default(),
        )
    }

    /// Writes `ops`, but only while `fence` holds (see [`Fence`]); `lazy`
    /// when the write may wait for the disk.
    pub(super) fn commit(
        &self,
        dig: &str,
        ops: Vec<BatchOp>,
        fence: Fence<'_>,
        lazy: bool,
    ) -> Result<(), ContextError> {
        match fence {
            None if lazy => Ok(self.store.batch_lazy(ops)?),
            None => Ok(self.store.batch(ops)?),
            Some(fence) => {
                if self.store.batch_if(vec![fence.clone()], ops)? {
                    Ok(())
                } else {
                    Err(ContextError::Fenced(dig.to_owned()))
                }
            }
        }
    }

    /// Stores `state` alone.
    pub fn put_state(
        &self,
        dig: &str,
        state: &DigState,
        fence: Fence<'_>,
    ) -> Result<(), ContextError> {
        self.commit(dig, vec![Self::state_op(dig, state)], fence, false)
    }

    /// What a step after the deploy left to say about `dig` (why it could
    /// not be done); `None` when it was done or has nothing to say.
    pub fn note(&self, dig: &str) -> Result<Option<String>, ContextError> {
        self.get_json(&format!("ctx/{dig}/note"))
    }

    /// Records (or, with `None`, clears) [`Self::note`], unless it is so.
    pub fn put_note(&self, dig: &str, note: Option<&str>) -> Result<(), ContextError> {
        if self.note(dig)?.as_deref() == note {
            return Ok(());
        }
        let key = format!("ctx/{dig}/note").into_bytes();
        Ok(self.store.batch(vec![match note {
            Some(note) => BatchOp::Put(key, json(note)),
            None => BatchOp::Delete(key),
        }])?)
    }

    /// Every DIG with a state, and that state.
    pub fn states(&self) -> Result<Vec<(String, DigState)>, ContextError> {
        let mut states = Vec::new();
        self.store.visit_prefix(b"ctx/", &mut |key, value| {
            let key = String::from_utf8_lossy(key);
            if let Some(dig) = key
                .strip_prefix("ctx/")
                .and_then(|k| k.strip_suffix("/state"))
                && let Ok(state) = serde_json::from_slice(value)
            {
                states.push((dig.to_owned(), state));
            }
        })?;
        Ok(states)
    }

    /// Removes everything stored for the DIG (its contexts and state); on
    /// a store that takes fewer changes at once, the state goes last, so
    /// an interrupted removal can be done again.
    pub fn forget(&self, dig: &str) -> Result<(), ContextError> {
        let state = format!("ctx/{dig}/state").into_bytes();
        let mut ops: Vec<BatchOp> = self
            .store
            .scan_prefix(format!("ctx/{dig}/").as_bytes())?
            .into_iter()
            .filter(|(key, _)| *key != state)
            .map(|(key, _)| BatchOp::Delete(key))
            .collect();
        ops.push(BatchOp::Delete(state));
        let most = self.store.max_batch();
        if ops.len() <= most {
            return Ok(self.store.batch(ops)?);
        }
        let last = ops.split_off(ops.len() - 1);
        for chunk in ops.chunks(most).chain([last.as_slice()]) {
            self.store.batch(chunk.to_vec())?;
        }
        Ok(())
    }

    /// Keys stored for the DIG (for tests and size reports).
    pub fn key_count(&self, dig: &str) -> Result<usize, ContextError> {
        let mut count = 0;
        self.store
            .visit_prefix(format!("ctx/{dig}/").as_bytes(), &mut |_, _| count += 1)?;
        Ok(count)
    }
}

/// Our own plain data types serialise without fail.
pub(super) fn json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
