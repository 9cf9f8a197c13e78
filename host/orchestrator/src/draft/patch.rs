//! A controller's JSON or merge patch, parsed once and applied per cluster.

use serde_json::Value;

use wasmco_core::resource::{ManifestError, Resource, ResourceKey};
use wasmco_runtime::contract;

use crate::budget::Budget;

/// A controller's patch, parsed once for all the clusters it applies to.
pub(super) enum ParsedPatch {
    Json(json_patch::Patch),
    Merge(Value),
}

impl ParsedPatch {
    pub(super) fn parse(patch: &contract::Patch) -> Result<Self, String> {
        match patch {
            contract::Patch::JsonPatch(text) => serde_json::from_str(text)
                .map(ParsedPatch::Json)
                .map_err(|e| format!("json-patch is not an RFC 6902 patch: {e}")),
            contract::Patch::MergePatch(text) => match serde_json::from_str(text) {
                Ok(value @ Value::Object(_)) => Ok(ParsedPatch::Merge(value)),
                Ok(_) => Err("merge-patch must be a JSON object".into()),
                Err(e) => Err(format!("merge-patch is not JSON: {e}")),
            },
        }
    }

    /// The patched copy of `resource`, which must still be `key`. JSON
    /// patch operations apply one at a time, the budget checked after each;
    /// a `copy` or `move` into its own subtree is refused (repeated, it
    /// doubles the manifest each time).
    pub(super) fn apply(
        &self,
        resource: &Resource,
        key: &ResourceKey,
        budget: &mut Budget,
    ) -> Result<Resource, String> {
        let mut manifest = resource.manifest.clone();
        match self {
            ParsedPatch::Json(patch) => {
                for (position, operation) in patch.0.iter().enumerate() {
                    if let Some((from, path)) = into_own_subtree(operation) {
                        return Err(format!(
                            "json-patch on {key}: operation {position} copies {from} into its own subtree ({path})"
                        ));
                    }
                    // On the copy: an error discards it, so the unchecked
                    // variant (no undo log) is enough.
                    json_patch::patch_unsafe(&mut manifest, std::slice::from_ref(operation))
                        .map_err(|e| format!("json-patch on {key} failed: {e}"))?;
                    budget
                        .spend(&manifest, 1)
                        .map_err(|e| format!("json-patch on {key}: {e}"))?;
                }
            }
            ParsedPatch::Merge(patch) => {
                json_patch::merge(&mut manifest, patch);
                budget
                    .spend(&manifest, 1)
                    .map_err(|e| format!("merge-patch on {key}: {e}"))?;
            }
        }
        let patched = Resource::from_manifest(manifest)
            .map_err(|e: ManifestError| format!("patched {key} is no longer valid: {e}"))?;
        if patched.key != *key {
            return Err(format!(
                "a patch may not change kind or metadata.name ({key} became {})",
                patched.key
            ));
        }
        Ok(patched)
    }
}

/// `from` and `path` of a `copy` or `move` whose target lies inside its source.
fn into_own_subtree(operation: &json_patch::PatchOperation) -> Option<(&str, &str)> {
    let (from, path) = match operation {
        json_patch::PatchOperation::Copy(op) => (op.from.as_str(), op.path.as_str()),
        json_patch::PatchOperation::Move(op) => (op.from.as_str(), op.path.as_str()),
        _ => return None,
    };
    let inside = from.is_empty() && !path.is_empty()
        || path
            .strip_prefix(from)
            .is_some_and(|rest| rest.starts_with('/'));
    inside.then_some((from, path))
}
