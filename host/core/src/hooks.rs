//! Helm hooks as an AppContext keeps them: objects rsync applies around an
//! app's own resources, at the lifecycle events their annotations name.

use serde::{Deserialize, Serialize};

use crate::resource::Resource;

/// When a hook runs (Helm's `helm.sh/hook` values wasmco knows).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// Before the app's resources are first applied to a cluster.
    PreInstall,
    /// After they are first ready there.
    PostInstall,
    /// Before they are removed at terminate.
    PreDelete,
    /// After they are gone.
    PostDelete,
    /// Before an update's resources are applied (kept, not run).
    PreUpgrade,
    /// After an update is ready (kept, not run).
    PostUpgrade,
    /// Before a rollback (kept, not run).
    PreRollback,
    /// After a rollback (kept, not run).
    PostRollback,
}

impl HookEvent {
    /// Helm's name for it; `None` for a name wasmco does not know.
    pub fn parse(name: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
    }
}

/// When a hook's object is deleted (`helm.sh/hook-delete-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HookDeletePolicy {
    /// Delete the previous object before the hook is created again
    /// (Helm's default when no policy is given).
    BeforeHookCreation,
    /// Delete it once the hook succeeded.
    HookSucceeded,
    /// Delete it if the hook failed.
    HookFailed,
}

impl HookDeletePolicy {
    /// Helm's name for it; `None` for one wasmco does not know.
    pub fn parse(name: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
    }
}

/// One hook of an app.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// The object.
    pub resource: Resource,
    /// When it runs.
    pub events: Vec<HookEvent>,
    /// Lower first; ties by name.
    pub weight: i32,
    /// When its object is deleted; Helm's default when empty.
    pub delete_policies: Vec<HookDeletePolicy>,
}

impl Hook {
    /// Whether it runs at `event`.
    pub fn runs_at(&self, event: HookEvent) -> bool {
        self.events.contains(&event)
    }

    /// Whether its object is deleted under `policy` (Helm deletes before
    /// creating again when no policy is given).
    pub fn deleted_on(&self, policy: HookDeletePolicy) -> bool {
        if self.delete_policies.is_empty() {
            return policy == HookDeletePolicy::BeforeHookCreation;
        }
        self.delete_policies.contains(&policy)
    }
}

/// A hook as stored: the manifest and its annotations' meaning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredHook {
    /// When it runs.
    pub events: Vec<HookEvent>,
    /// Its weight.
    pub weight: i32,
    /// Its delete policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<HookDeletePolicy>,
    /// The object.
    pub manifest: serde_json::Value,
}

impl From<&Hook> for StoredHook {
    fn from(hook: &Hook) -> Self {
        StoredHook {
            events: hook.events.clone(),
            weight: hook.weight,
            delete_policies: hook.delete_policies.clone(),
            manifest: hook.resource.manifest.clone(),
        }
    }
}

impl TryFrom<StoredHook> for Hook {
    type Error = crate::resource::ManifestError;

    fn try_from(stored: StoredHook) -> Result<Self, Self::Error> {
        Ok(Hook {
            resource: Resource::from_manifest(stored.manifest)?,
            events: stored.events,
            weight: stored.weight,
            delete_policies: stored.delete_policies,
        })
    }
}
