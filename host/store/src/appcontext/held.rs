//! Names taken once across every host (a namespace of the clusters, say),
//! kept under `held/<space>/<name>` with their holder as the value.

use super::error::ContextError;
use super::store::ContextStore;
use crate::kv::{BatchOp, Expect};

impl ContextStore {
    /// Takes `name` of `space` (a namespace of the clusters, say) for
    /// `holder`, unless another holds it: that one's name then. Taken at
    /// most once, whichever host asks first.
    pub fn hold(
        &self,
        space: &str,
        name: &str,
        holder: &str,
    ) -> Result<Option<String>, ContextError> {
        let key = format!("held/{space}/{name}").into_bytes();
        loop {
            match self.store.get(&key)? {
                Some(current) if current == holder.as_bytes() => return Ok(None),
                Some(current) => return Ok(Some(String::from_utf8_lossy(&current).into_owned())),
                None => {
                    let taken = self.store.batch_if(
                        vec![Expect::Absent(key.clone())],
                        vec![BatchOp::Put(key.clone(), holder.as_bytes().to_vec())],
                    )?;
                    if taken {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Gives `name` of `space` back, if `holder` holds it.
    pub fn let_go(&self, space: &str, name: &str, holder: &str) -> Result<(), ContextError> {
        let key = format!("held/{space}/{name}").into_bytes();
        self.store.batch_if(
            vec![Expect::Value(key.clone(), holder.as_bytes().to_vec())],
            vec![BatchOp::Delete(key)],
        )?;
        Ok(())
    }

    /// Every name of `space` `holder` holds.
    pub fn held_by(&self, space: &str, holder: &str) -> Result<Vec<String>, ContextError> {
        let prefix = format!("held/{space}/");
        Ok(self
            .store
            .scan_prefix(prefix.as_bytes())?
            .into_iter()
            .filter(|(_, value)| value == holder.as_bytes())
            .map(|(key, _)| String::from_utf8_lossy(&key[prefix.len()..]).into_owned())
            .collect())
    }
}
