//! The draft itself: its apps in app order and the clusters they may use,
//! and the draft as the context store keeps it.

use std::collections::HashMap;
use std::sync::Arc;

use fixedbitset::FixedBitSet;
use wasmco_core::ClusterInfo;
use wasmco_core::resource::ClusterRef;
use wasmco_store::appcontext::{StoredApp, StoredPlacement};

use super::model::{AppDraft, ClusterIndex, Override};

/// The AppContext under construction.
#[derive(Debug, Clone)]
pub struct DraftContext {
    /// Shared: the pipeline works on a copy of the draft, and 100,000
    /// clusters' labels are not worth copying.
    pub(super) clusters: Arc<[ClusterInfo]>,
    pub(super) apps: Vec<AppDraft>,
    app_index: HashMap<String, usize>,
}

impl DraftContext {
    /// A draft of `apps` (in app order) that may use `clusters`.
    pub fn new(apps: Vec<AppDraft>, clusters: Vec<ClusterInfo>) -> Self {
        let app_index = apps
            .iter()
            .enumerate()
            .map(|(i, app)| (app.name.clone(), i))
            .collect();
        DraftContext {
            clusters: clusters.into(),
            apps,
            app_index,
        }
    }

    /// The candidate clusters.
    pub fn clusters(&self) -> &[ClusterInfo] {
        &self.clusters
    }

    /// The apps, in app order.
    pub fn apps(&self) -> &[AppDraft] {
        &self.apps
    }

    /// The draft as the context store keeps it: clusters named
    /// `provider+cluster`, and overrides only for the clusters an app is
    /// placed on.
    pub fn into_stored(self) -> Vec<StoredApp> {
        // Each placed cluster's reference made once, and only theirs: a DIG
        // on three clusters of 100,000 makes three.
        let mut references: Vec<Option<ClusterRef>> = vec![None; self.clusters.len()];
        for placed in self.apps.iter().flat_map(|app| &app.placement) {
            let slot = &mut references[placed.cluster as usize];
            if slot.is_none() {
                *slot = Some(self.clusters[placed.cluster as usize].reference());
            }
        }
        let clusters = &self.clusters;
        let key = |index: ClusterIndex| {
            references[index as usize]
                .clone()
                .unwrap_or_else(|| clusters[index as usize].reference())
        };
        self.apps
            .into_iter()
            .map(|app| {
                let mut placed = FixedBitSet::with_capacity(app.placed_bound());
                for p in &app.placement {
                    placed.insert(p.cluster as usize);
                }
                let diffs = app
                    .overrides
                    .into_iter()
                    .filter(|(cluster, _)| placed.contains(*cluster as usize))
                    .map(|(cluster, overrides)| {
                        let diff = overrides
                            .into_iter()
                            .map(|(k, o)| match o {
                                Override::Set(r) => (k, Some(r)),
                                Override::Removed => (k, None),
                            })
                            .collect();
                        (key(cluster), diff)
                    })
                    .collect();
                let placement = app
                    .placement
                    .iter()
                    .map(|p| StoredPlacement {
                        cluster: key(p.cluster),
                        group: p.group.clone(),
                    })
                    .collect();
                StoredApp {
                    name: app.name,
                    base: app.base,
                    placement,
                    diffs,
                    hooks: app.hooks,
                }
            })
            .collect()
    }

    pub(super) fn app_position(&self, name: &str) -> Result<usize, String> {
        self.app_index.get(name).copied().ok_or_else(|| {
            // The name comes from a controller: quoted, it could be any size.
            let shown = wasmco_core::limits::cut(name, 256);
            let more = if shown.len() < name.len() { "…" } else { "" };
            format!("app {shown:?}{more} is not part of this deployment")
        })
    }

    pub(super) fn describe_cluster(&self, index: ClusterIndex) -> String {
        match self.clusters.get(index as usize) {
            Some(c) => format!("{}/{}", c.provider, c.name),
            None => format!("#{index}"),
        }
    }
}
