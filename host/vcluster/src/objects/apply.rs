//! Server-side apply on the store: field ownership decides what an apply
//! may change and what it removes.

use serde_json::Value;

use super::error::KubeError;
use super::model::{Event, PatchKind};
use super::store::Objects;
use crate::catalog::ResourceType;

impl Objects {
    /// Server-side apply of `body` by `manager`: a change to a field
    /// another manager owns is a 409 Conflict unless `force`; fields
    /// `manager` applied before and no longer does are removed.
    pub fn apply(
        &mut self,
        ty: &ResourceType,
        namespace: &str,
        name: &str,
        body: Value,
        manager: &str,
        force: bool,
    ) -> Result<(Value, Event, bool), KubeError> {
        let key = Self::key(ty, namespace, name);
        let before = self.get(ty, namespace, name).ok();
        let owners = self.owners.get(&key).cloned().unwrap_or_default();
        let patch = match &before {
            None => body.clone(),
            Some(current) => {
                let conflicts = owners.conflicts(manager, &body, current);
                if !conflicts.is_empty() && !force {
                    return Err(KubeError::apply_conflicts(&conflicts));
                }
                owners.apply_patch(manager, &body)
            }
        };
        let answer = self.patch(ty, namespace, name, PatchKind::Apply, patch)?;
        self.owners
            .entry(key)
            .or_default()
            .applied(manager, &body, before.as_ref());
        Ok(answer)
    }

    /// Records that `manager` made `after` out of `before` by a create,
    /// replace or patch: it owns the fields it changed.
    pub fn updated_by(
        &mut self,
        ty: &ResourceType,
        manager: &str,
        before: Option<&Value>,
        after: &Value,
    ) {
        let namespace = after["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = after["metadata"]["name"].as_str().unwrap_or_default();
        self.owners
            .entry(Self::key(ty, namespace, name))
            .or_default()
            .updated(manager, before, after);
    }
}
