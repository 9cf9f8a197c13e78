//! Placement edits: checked, then applied all or none.

use std::collections::{HashMap, HashSet};

use wasmco_runtime::contract::PlacementEdit;

use super::context::DraftContext;
use super::model::{AppDraft, ClusterIndex, EditError, PlacedCluster};
use crate::budget::{Budget, EditLimits};

impl DraftContext {
    /// [`Self::apply_placement_within`] the default limits.
    pub fn apply_placement(&mut self, edits: &[PlacementEdit]) -> Result<(), EditError> {
        self.apply_placement_within(edits, EditLimits::default())
    }

    /// Checks every placement edit, then applies them all; on error nothing
    /// changes. Work is linear in the edits and the clusters they list.
    pub fn apply_placement_within(
        &mut self,
        edits: &[PlacementEdit],
        limits: EditLimits,
    ) -> Result<(), EditError> {
        Budget::new(limits)
            .check_count(edits.len())
            .map_err(|reason| EditError {
                index: limits.max_edits,
                reason,
            })?;
        let mut resolved = Vec::with_capacity(edits.len());
        for (index, edit) in edits.iter().enumerate() {
            let fail = |reason: String| EditError { index, reason };
            let (app, clusters) = match edit {
                PlacementEdit::Place(p) => (&p.app, &p.clusters),
                PlacementEdit::Unplace(u) => (&u.app, &u.clusters),
            };
            let position = self.app_position(app).map_err(fail)?;
            if let Some(bad) = clusters
                .iter()
                .find(|&&c| c as usize >= self.clusters.len())
            {
                return Err(fail(format!(
                    "cluster index {bad} is outside the {} candidate clusters",
                    self.clusters.len()
                )));
            }
            if let PlacementEdit::Place(p) = edit {
                if p.group.as_deref().is_some_and(str::is_empty) {
                    return Err(fail("an anyOf group needs a non-empty id".into()));
                }
                if p.clusters.is_empty() {
                    return Err(fail(format!("placing app {app} on no cluster")));
                }
            }
            resolved.push(position);
        }
        let mut indices: HashMap<usize, PlacementIndex> = HashMap::new();
        for (edit, position) in edits.iter().zip(resolved) {
            let app = &mut self.apps[position];
            let index = indices
                .entry(position)
                .or_insert_with(|| PlacementIndex::of(app));
            match edit {
                PlacementEdit::Place(p) => {
                    for &cluster in &p.clusters {
                        index.place(app, cluster, &p.group);
                    }
                }
                PlacementEdit::Unplace(u) => {
                    for cluster in &u.clusters {
                        index.unplace(app, *cluster);
                    }
                }
            }
        }
        for (position, index) in indices {
            index.compact(&mut self.apps[position]);
        }
        Ok(())
    }

    /// Ends placement as EMCO does: every allOf cluster stays, and of each
    /// anyOf group only its first cluster (unless the app is already there).
    pub fn settle_placement(&mut self) {
        for app in &mut self.apps {
            let mut settled: Vec<PlacedCluster> = Vec::new();
            let mut taken: HashSet<ClusterIndex> = HashSet::new();
            let mut groups_done: HashSet<&str> = HashSet::new();
            for placed in &app.placement {
                if placed.group.is_none() && taken.insert(placed.cluster) {
                    settled.push(placed.clone());
                }
            }
            for placed in &app.placement {
                let Some(group) = placed.group.as_deref() else {
                    continue;
                };
                if groups_done.insert(group) && taken.insert(placed.cluster) {
                    settled.push(placed.clone());
                }
            }
            app.placement = settled;
        }
    }
}

/// Where an app's placed clusters are, kept while placement edits apply so
/// each edit costs what it lists, not what the app already has. Unplaced
/// entries are marked and dropped once at the end.
struct PlacementIndex {
    /// The live clusters of each group (`None`: allOf).
    present: HashMap<Option<String>, HashSet<ClusterIndex>>,
    /// Positions in `placement` of each cluster's live entries.
    positions: HashMap<ClusterIndex, Vec<usize>>,
    /// Positions unplaced during this batch.
    dropped: HashSet<usize>,
}

impl PlacementIndex {
    fn of(app: &AppDraft) -> Self {
        let mut index = PlacementIndex {
            present: HashMap::new(),
            positions: HashMap::new(),
            dropped: HashSet::new(),
        };
        for (position, placed) in app.placement.iter().enumerate() {
            index
                .present
                .entry(placed.group.clone())
                .or_default()
                .insert(placed.cluster);
            index
                .positions
                .entry(placed.cluster)
                .or_default()
                .push(position);
        }
        index
    }

    fn place(&mut self, app: &mut AppDraft, cluster: ClusterIndex, group: &Option<String>) {
        let fresh = self
            .present
            .entry(group.clone())
            .or_default()
            .insert(cluster);
        if fresh {
            self.positions
                .entry(cluster)
                .or_default()
                .push(app.placement.len());
            app.placement.push(PlacedCluster {
                cluster,
                group: group.clone(),
            });
        }
    }

    fn unplace(&mut self, app: &AppDraft, cluster: ClusterIndex) {
        for position in self.positions.remove(&cluster).unwrap_or_default() {
            if let Some(set) = self.present.get_mut(&app.placement[position].group) {
                set.remove(&cluster);
            }
            self.dropped.insert(position);
        }
    }

    fn compact(self, app: &mut AppDraft) {
        if self.dropped.is_empty() {
            return;
        }
        let mut position = 0;
        app.placement.retain(|_| {
            let keep = !self.dropped.contains(&position);
            position += 1;
            keep
        });
    }
}
