//! Placement edits: checked, then applied all or none.

use std::collections::{HashMap, HashSet};

use fixedbitset::FixedBitSet;

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
        let bound = self.clusters.len();
        let mut indices: HashMap<usize, PlacementIndex> = HashMap::new();
        for (edit, position) in edits.iter().zip(resolved) {
            let app = &mut self.apps[position];
            let index = indices
                .entry(position)
                .or_insert_with(|| PlacementIndex::of(app, bound));
            match edit {
                PlacementEdit::Place(p) => index.place(app, &p.clusters, &p.group, bound),
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
            let mut taken = FixedBitSet::with_capacity(app.placed_bound());
            let mut groups_done: HashSet<&str> = HashSet::new();
            for placed in &app.placement {
                if placed.group.is_none() && !taken.put(placed.cluster as usize) {
                    settled.push(placed.clone());
                }
            }
            for placed in &app.placement {
                let Some(group) = placed.group.as_deref() else {
                    continue;
                };
                if groups_done.insert(group) && !taken.put(placed.cluster as usize) {
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
    present: HashMap<Option<String>, Members>,
    /// Positions in `placement` of each cluster's live entries: only an
    /// unplace needs them, so they are worked out at the first one.
    positions: Option<HashMap<ClusterIndex, Vec<usize>>>,
    /// Positions unplaced during this batch.
    dropped: FixedBitSet,
}

impl PlacementIndex {
    /// The index of `app`'s placement over `bound` candidate clusters.
    fn of(app: &AppDraft, bound: usize) -> Self {
        let mut present: HashMap<Option<String>, Members> = HashMap::new();
        for placed in &app.placement {
            present
                .entry(placed.group.clone())
                .or_insert_with(|| Members::of(&placed.group, bound))
                .add(placed.cluster);
        }
        PlacementIndex {
            present,
            positions: None,
            dropped: FixedBitSet::new(),
        }
    }

    /// Places `app` on each of `clusters` (checked to be below `bound`) in
    /// `group`, where it is not already there in that group.
    fn place(
        &mut self,
        app: &mut AppDraft,
        clusters: &[ClusterIndex],
        group: &Option<String>,
        bound: usize,
    ) {
        let live = self
            .present
            .entry(group.clone())
            .or_insert_with(|| Members::of(group, bound));
        for &cluster in clusters {
            if !live.add(cluster) {
                continue;
            }
            if let Some(positions) = &mut self.positions {
                positions
                    .entry(cluster)
                    .or_default()
                    .push(app.placement.len());
            }
            app.placement.push(PlacedCluster {
                cluster,
                group: group.clone(),
            });
        }
    }

    fn unplace(&mut self, app: &AppDraft, cluster: ClusterIndex) {
        let positions = self.positions.get_or_insert_with(|| {
            let mut positions: HashMap<ClusterIndex, Vec<usize>> = HashMap::new();
            for (position, placed) in app.placement.iter().enumerate() {
                positions.entry(placed.cluster).or_default().push(position);
            }
            positions
        });
        for position in positions.remove(&cluster).unwrap_or_default() {
            if let Some(live) = self.present.get_mut(&app.placement[position].group) {
                live.remove(cluster);
            }
            self.dropped.grow(position + 1);
            self.dropped.insert(position);
        }
    }

    fn compact(self, app: &mut AppDraft) {
        if self.dropped.is_clear() {
            return;
        }
        let mut position = 0;
        app.placement.retain(|_| {
            let keep = !self.dropped.contains(position);
            position += 1;
            keep
        });
    }
}

/// The live clusters of one group. AllOf's are a bit per candidate: it may
/// hold them all, and 100,000 placements then hash nothing. An anyOf
/// group's are hashed: a controller may make thousands of small groups,
/// and a bit set each would cost the whole fleet's size apiece.
enum Members {
    Dense(FixedBitSet),
    Sparse(HashSet<ClusterIndex>),
}

impl Members {
    /// The empty members of `group` over `bound` candidate clusters.
    fn of(group: &Option<String>, bound: usize) -> Self {
        match group {
            None => Members::Dense(FixedBitSet::with_capacity(bound)),
            Some(_) => Members::Sparse(HashSet::new()),
        }
    }

    /// Adds `cluster` (below the bound); whether it was not there yet.
    fn add(&mut self, cluster: ClusterIndex) -> bool {
        match self {
            Members::Dense(bits) => !bits.put(cluster as usize),
            Members::Sparse(set) => set.insert(cluster),
        }
    }

    fn remove(&mut self, cluster: ClusterIndex) {
        match self {
            Members::Dense(bits) => bits.set(cluster as usize, false),
            Members::Sparse(set) => {
                set.remove(&cluster);
            }
        }
    }
}
