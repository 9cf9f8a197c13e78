//! The request a gate controller gets, from what a rollout knows in plain
//! terms: the server builds it from the rollout's state, `wasmco
//! controller test` from a fixture.

use wasmco_core::ClusterInfo;

use super::{Cell, GateRequest, Interner};

/// One app on one released cluster, as rsync's statuses count it.
pub struct GateCell<'a> {
    /// The app's name.
    pub app: &'a str,
    /// An index into the released clusters, in group order.
    pub cluster: u32,
    /// The app's resources there, and how many are Ready and Failed.
    pub resources: u32,
    /// Of them, Ready.
    pub ready: u32,
    /// Of them, Failed.
    pub failed: u32,
}

/// What a gate is told about a rollout.
pub struct GateFacts<'a> {
    /// The gate's intent, as JSON.
    pub intent: &'a str,
    /// The revision being rolled out.
    pub revision: u64,
    /// The revision before (0: none).
    pub from_revision: u64,
    /// How many groups there are.
    pub groups: u32,
    /// The clusters of each group released so far, in order.
    pub released: Vec<Vec<&'a ClusterInfo>>,
    /// Every app on every released cluster.
    pub cells: Vec<GateCell<'a>>,
    /// Indices into the released clusters.
    pub unreachable: Vec<u32>,
    /// Milliseconds since the last group was released, and since it was
    /// first seen Ready (0: not yet).
    pub released_ms: u64,
    /// See [`Self::released_ms`].
    pub ready_ms: u64,
}

impl GateFacts<'_> {
    /// The request, its strings interned and its clusters in group order.
    pub fn request(&self) -> GateRequest {
        let clusters: Vec<&ClusterInfo> = self.released.iter().flatten().copied().collect();
        let mut group_start = vec![0u32];
        let mut end = 0u32;
        for group in &self.released {
            end = end.saturating_add(u32::try_from(group.len()).unwrap_or(u32::MAX));
            group_start.push(end);
        }
        let mut interner = Interner::default();
        interner.add_clusters(clusters.iter().copied());
        for cell in &self.cells {
            interner.add(cell.app);
        }
        let (strings, ids) = interner.finish();
        let cells = self
            .cells
            .iter()
            .map(|cell| Cell {
                app: ids.id(cell.app),
                cluster: cell.cluster,
                resources: cell.resources,
                ready: cell.ready,
                failed: cell.failed,
            })
            .collect();
        GateRequest {
            clusters: ids.cluster_table(clusters.iter().copied()),
            strings,
            intent: self.intent.to_owned(),
            revision: self.revision,
            from_revision: self.from_revision,
            group: u32::try_from(self.released.len()).unwrap_or(u32::MAX),
            groups: self.groups,
            group_start,
            cells,
            unreachable: self.unreachable.clone(),
            released_ms: self.released_ms,
            ready_ms: self.ready_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{GateCell, GateFacts};
    use wasmco_core::ClusterInfo;

    fn cluster(name: &str) -> ClusterInfo {
        ClusterInfo {
            provider: "dev".into(),
            name: name.into(),
            labels: vec!["edge".into()],
            kv: vec![("zone".into(), "a".into())],
        }
    }

    #[test]
    fn groups_start_where_the_last_ended_and_cells_name_their_app() {
        let (a, b, c) = (cluster("a"), cluster("b"), cluster("c"));
        let facts = GateFacts {
            intent: "{}",
            revision: 2,
            from_revision: 1,
            groups: 3,
            released: vec![vec![&a], vec![&b, &c]],
            cells: vec![GateCell {
                app: "web",
                cluster: 2,
                resources: 2,
                ready: 1,
                failed: 1,
            }],
            unreachable: vec![1],
            released_ms: 5,
            ready_ms: 0,
        };
        let request = facts.request();
        assert_eq!(request.group, 2);
        assert_eq!(request.group_start, [0, 1, 3]);
        assert_eq!(request.clusters.name.len(), 3);
        let text = |id: u32| {
            let ends = &request.strings.ends;
            let start = if id == 0 { 0 } else { ends[id as usize - 1] };
            &request.strings.data[start as usize..ends[id as usize] as usize]
        };
        assert_eq!(text(request.cells[0].app), "web");
        assert_eq!(text(request.clusters.name[2]), "c");
        assert_eq!(request.unreachable, [1]);
    }
}
