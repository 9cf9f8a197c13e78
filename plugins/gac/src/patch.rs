//! Patching an object an app already has (`newObject: "false"`) with one
//! customization, on the clusters it selects that hold the object.

use serde_json::Value;
use wasmco_guest::{Clusters, StringTable};

use crate::build::Customization;
use crate::clusters::{describe, list, scope};
use crate::spec::{PatchType, ResourceSpec};
use crate::state::{AppState, Key, Tracked};
use crate::{ActionEdit, ControllerError, Patch, PatchResource, ResourceRef};

/// One customization of an existing object, with what naming it in an
/// error or an edit takes.
pub struct Patching<'a> {
    pub spec: &'a ResourceSpec,
    pub customization: &'a Customization<'a>,
    /// Which intent and resource, for errors.
    pub context: &'a str,
    pub strings: StringTable<'a>,
    pub clusters: Clusters<'a>,
    /// The app's clusters, by position.
    pub placed: &'a [u32],
}

/// A version of the object (an index into its tracked values) and the
/// positions that hold it.
type Group = (usize, Vec<usize>);

impl Patching<'_> {
    /// Patches the object in `state` on the selected positions that hold
    /// it, and pushes the edits that do the same on the host.
    pub fn apply(
        &self,
        state: &mut AppState<'_>,
        selection: &[usize],
        edits: &mut Vec<ActionEdit>,
    ) -> Result<(), ControllerError> {
        let gvk = &self.spec.resource_gvk;
        let kind = state
            .find_kind(&gvk.kind, &gvk.name)
            .ok_or_else(|| self.missing(selection))?;
        let key: Key = (kind, gvk.name.clone());
        let tracked = state.track(&key).map_err(|reason| self.fail(reason))?;
        let present = tracked.present();
        let targets: Vec<usize> = selection
            .iter()
            .copied()
            .filter(|position| present.binary_search(position).is_ok())
            .collect();
        if targets.is_empty() {
            return Err(self.missing(selection));
        }
        let everywhere = targets.len() == present.len();
        let target = ResourceRef {
            kind: key.0.clone(),
            name: key.1.clone(),
        };
        let groups = tracked.groups(&targets);
        let results = self.patched(tracked, &groups, &key.0)?;
        if self.customization.patch == Some(PatchType::Json) {
            // The host applies the user's own operations, which it does to
            // every cluster's version alike.
            edits.push(ActionEdit::Patch(PatchResource {
                app: self.spec.app.clone(),
                scope: scope(everywhere, &targets, self.placed),
                target,
                patch: Patch::JsonPatch(self.customization.json_patch_text()),
            }));
        } else {
            edits.extend(self.differences(&groups, &results, everywhere, &target)?);
        }
        for ((version, group), (_, after)) in groups.into_iter().zip(results) {
            tracked.set(version, &group, Some(after));
        }
        Ok(())
    }

    /// Each version of the object before and after the customization.
    fn patched(
        &self,
        tracked: &Tracked,
        groups: &[Group],
        kind: &str,
    ) -> Result<Vec<(Value, Value)>, ControllerError> {
        let mut results = Vec::with_capacity(groups.len());
        for (version, group) in groups {
            let before = tracked.value(*version).cloned().unwrap_or_default();
            let mut after = before.clone();
            self.customization
                .apply_patch(&mut after, kind)
                .map_err(|reason| {
                    self.fail(format!(
                        "on cluster {}: {reason}",
                        describe(&self.strings, &self.clusters, self.placed[group[0]])
                    ))
                })?;
            results.push((before, after));
        }
        Ok(results)
    }

    /// The edits of a strategic merge: no RFC 7386 merge, so the host gets
    /// the exact change, per version.
    fn differences(
        &self,
        groups: &[Group],
        results: &[(Value, Value)],
        everywhere: bool,
        target: &ResourceRef,
    ) -> Result<Vec<ActionEdit>, ControllerError> {
        let single = groups.len() == 1;
        let mut edits = Vec::new();
        for ((_, group), (before, after)) in groups.iter().zip(results) {
            let diff = json_patch::diff(before, after);
            if diff.0.is_empty() {
                continue;
            }
            let text = serde_json::to_string(&diff).map_err(|e| self.fail(e.to_string()))?;
            edits.push(ActionEdit::Patch(PatchResource {
                app: self.spec.app.clone(),
                scope: scope(everywhere && single, group, self.placed),
                target: target.clone(),
                patch: Patch::JsonPatch(text),
            }));
        }
        Ok(edits)
    }

    fn fail(&self, reason: String) -> ControllerError {
        ControllerError {
            message: format!(
                "{}, customization {:?}: {reason}",
                self.context, self.customization.name
            ),
        }
    }

    /// The error for an object none of the selected clusters holds.
    fn missing(&self, selection: &[usize]) -> ControllerError {
        let gvk = &self.spec.resource_gvk;
        self.fail(format!(
            "app {:?} has no {} {} on the clusters the customization selects ({})",
            self.spec.app,
            gvk.kind,
            gvk.name,
            list(
                &self.strings,
                &self.clusters,
                selection.iter().map(|&p| self.placed[p])
            )
        ))
    }
}
